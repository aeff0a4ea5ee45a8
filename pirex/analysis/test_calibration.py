"""Calibration by simulation: every interval pirex prints covers at the level it states, at the repetition counts
pirex uses (five at kick-the-tires, 10, 30), for normal and log-normal run means and for Poisson and overdispersed
(negative binomial) counts (../shared/STATISTICS.md, "Proving it"; docs/statistics.md has the table).

Each method is simulated on DRAWS data sets at once through the same vectorised core its production function calls
(stats.t_log_bounds, welch_log_bounds, cox_log_bounds, rate_bounds), and a few sets per method are also put through
the production function itself, so the calibration proves the code that runs, not a copy of it. With 20,000 draws
the standard error of a 95 % coverage is 0.15 %: BAND = [93 %, 97 %] is a fair test. Exact intervals for counts are
discrete and therefore conservative: for them only the lower edge is a requirement, and the table says where they
lie above 97 %.

`pytest -s pirex/analysis/test_calibration.py` prints the table (method, n, distribution, coverage). To calibrate
something more (a rule's verdict regions, another interval), simulate it vectorised and pass its coverage to
record(); the table at the end shows it with the rest."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from pirex.analysis import stats

DRAWS = 20_000
NS = (5, 10, 30)
LEVEL = 0.95
BAND = (0.93, 0.97)
CHECKED = 3  # data sets per case also put through the production function


@dataclass(frozen=True)
class Row:
    method: str
    n: int
    distribution: str
    coverage: float
    draws: int
    note: str = ""


ROWS: list[Row] = []


def record(method: str, n: int, distribution: str, covered: np.ndarray, note: str = "") -> float:
    """Add a calibration row (covered: one bool per simulated data set) and return its coverage."""
    c = float(np.mean(covered))
    ROWS.append(Row(method, n, distribution, c, int(np.size(covered)), note))
    return c


def table(rows: list[Row]) -> str:
    """The rows as the Markdown table docs/statistics.md shows."""
    out = ["| method | n | distribution | coverage of 95 % | draws | note |", "|---|---:|---|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r.method} | {r.n} | {r.distribution} | {100 * r.coverage:.1f} % | {r.draws:,} | {r.note} |")
    return "\n".join(out)


def within_band(coverage: float, conservative: bool = False) -> bool:
    """[93 %, 97 %]; an exact (conservative) method only needs the lower edge."""
    return coverage >= BAND[0] and (conservative or coverage <= BAND[1])


@pytest.fixture(scope="module", autouse=True)
def _print_table():
    yield
    print("\n\nCalibration of pirex's intervals (nominal 95 %):\n" + table(ROWS))


def _seed(*key: object) -> np.random.Generator:
    """One seeded stream per case (not Python's salted hash), so that cases do not depend on the order they run in."""
    text = "/".join(map(str, key))
    return np.random.default_rng(sum((i + 1) * ord(c) for i, c in enumerate(text)))


# --- run means: normal errors (CV 10 %) and log-normal ones (sigma 0.5 on logs: strongly skewed values)

CV = 0.10
SIGMA = 0.5
DISTRIBUTIONS = ("normal", "log-normal")


def draw(rng: np.random.Generator, distribution: str, mean: float, shape: tuple[int, ...]) -> np.ndarray:
    """Positive run means around `mean`: normal with CV 10 % (clipped far out, at 5 sd, never reached), or
    log-normal mean * exp(sigma z) (its median is `mean`)."""
    z = rng.standard_normal(shape)
    if distribution == "normal":
        return mean * (1 + CV * np.clip(z, -5, 5))
    return mean * np.exp(SIGMA * z)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("n", NS)
def test_paired_t_on_logs_covers(n, distribution):
    """paired_ratio: per repetition both variants' means, the same error law on each side, so the truth
    exp(E log(num/den)) is the ratio of the scales, 1.05."""
    rng = _seed("paired", n, distribution)
    num, den = draw(rng, distribution, 105.0, (DRAWS, n)), draw(rng, distribution, 100.0, (DRAWS, n))
    low, high = stats.t_log_bounds(np.log(num / den), LEVEL)
    for i in range(CHECKED):  # the production function gives the same bounds
        iv = stats.paired_ratio(dict(enumerate(num[i])), dict(enumerate(den[i])), LEVEL)
        assert (iv.method, iv.low, iv.high) == ("t-log", pytest.approx(low[i]), pytest.approx(high[i]))
    c = record("paired t on logs (t-log)", n, distribution, (low <= 1.05) & (1.05 <= high))
    assert within_band(c), f"paired t-log covers {c:.3f} at n = {n}, {distribution}"


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("n", NS)
def test_welch_on_logs_covers(n, distribution):
    """welch_ratio: two independent groups of n runs, the numerator's spread twice the denominator's for the
    log-normal (Welch's case: unequal variances); truth: the ratio of the medians (geometric means), 1.05."""
    rng = _seed("welch", n, distribution)
    num = draw(rng, distribution, 105.0, (DRAWS, n))
    den = draw(rng, distribution, 100.0, (DRAWS, n))
    if distribution == "log-normal":
        den = 100.0 * (den / 100.0) ** 0.5  # sigma 0.25 against 0.5
    low, high = stats.welch_log_bounds(np.log(num), np.log(den), LEVEL)
    for i in range(CHECKED):
        iv = stats.welch_ratio(num[i], den[i], LEVEL)
        assert (iv.method, iv.low, iv.high) == ("welch-log", pytest.approx(low[i]), pytest.approx(high[i]))
    truth = 1.05 if distribution == "log-normal" else _normal_geometric_ratio(105.0, 100.0)
    c = record("Welch's t on logs (welch-log)", n, distribution, (low <= truth) & (truth <= high))
    assert within_band(c), f"welch-log covers {c:.3f} at n = {n}, {distribution}"


def _normal_geometric_ratio(a: float, b: float) -> float:
    """exp(E log X_a - E log X_b) for X = mean (1 + CV z): the same law scaled, so a / b."""
    return a / b


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("n", NS)
def test_mean_interval_cox_on_logs_covers(n, distribution):
    """mean_interval(positive=True): the arithmetic mean of one variant; truth 100 (normal) or
    100 exp(sigma^2 / 2) (log-normal)."""
    rng = _seed("cox", n, distribution)
    x = draw(rng, distribution, 100.0, (DRAWS, n))
    low, high = stats.cox_log_bounds(np.log(x), LEVEL)
    for i in range(CHECKED):
        iv = stats.mean_interval(x[i], LEVEL)
        assert (iv.method, iv.low, iv.high) == ("cox-log", pytest.approx(low[i]), pytest.approx(high[i]))
    truth = 100.0 if distribution == "normal" else 100.0 * math.exp(SIGMA**2 / 2)
    c = record("mean, modified Cox on logs (cox-log)", n, distribution, (low <= truth) & (truth <= high))
    assert within_band(c), f"cox-log covers {c:.3f} at n = {n}, {distribution}"


# --- counts: Poisson and negative binomial, paired by repetition (peaks of two configurations in one step,
# interrupts of two cases in one round) and unpaired

EXPOSURE = 1e6  # calls per repetition, both sides
COUNTS = {  # name -> (denominator's mean count per repetition, rate ratio, negative binomial shape k or None)
    "Poisson, 2 events": (2.0, 0.5, None),
    "Poisson, 50 events": (50.0, 1.2, None),
    "neg. binomial, 20 events, k 50": (20.0, 0.8, 50.0),  # mild (dispersion 1.4): the dispersion test's hard case
    "neg. binomial, 20 events, k 5": (20.0, 0.8, 5.0),
    "neg. binomial, 8000 events, CV 3 %": (8000.0, 2.0, 1 / 0.03**2),
}


def counts(rng: np.random.Generator, mean: float, k: float | None, shape: tuple[int, ...]) -> np.ndarray:
    """Poisson(mean), or negative binomial with that mean and variance mean + mean^2 / k (gamma-Poisson)."""
    if k is None:
        return rng.poisson(mean, shape).astype(float)
    return rng.poisson(mean * rng.gamma(k, 1 / k, shape)).astype(float)


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("case", list(COUNTS))
@pytest.mark.parametrize("n", NS)
def test_rate_ratio_covers(n, case, paired):
    """rate_ratio: exact conditional where the counts look Poisson, quasi-Poisson where they vary more. Paired
    data also carry a repetition effect common to both sides (a gamma factor, CV 30 %), which the block cancels."""
    mean, ratio, k = COUNTS[case]
    rng = _seed("rate", n, case, paired)
    shared = rng.gamma(1 / 0.09, 0.09, (DRAWS, n)) if paired else 1.0
    yn = counts(rng, mean * ratio * shared, k, (DRAWS, n))
    yd = counts(rng, mean * shared, k, (DRAWS, n))
    e = np.full((DRAWS, n), EXPOSURE)
    value, low, high, df = stats.rate_bounds(yn, e, yd, e, LEVEL, paired)
    keys = [range(n), range(n)] if paired else [range(n), range(n, 2 * n)]
    for i in range(CHECKED):
        num = {j: stats.Count(int(c), EXPOSURE) for j, c in zip(keys[0], yn[i], strict=True)}
        den = {j: stats.Count(int(c), EXPOSURE) for j, c in zip(keys[1], yd[i], strict=True)}
        iv = stats.rate_ratio(num, den, LEVEL)
        if iv.has_interval:
            assert (iv.value, iv.low, iv.high) == pytest.approx((value[i], low[i], high[i]))
            assert iv.method == ("poisson-exact" if np.isnan(df[i]) else "quasi-poisson")
    quasi = float(np.mean(~np.isnan(df)))
    covered = (low <= ratio) & (ratio <= high)  # no events at all: [0, inf] covers, and rate_ratio says so
    name = "rate ratio, " + ("paired" if paired else "unpaired")
    c = record(name, n, case, covered, f"quasi-Poisson in {100 * quasi:.0f} %")
    assert within_band(c, conservative=True), f"{name} covers {c:.3f} at n = {n}, {case}"


# --- the duet: its model with the CPU half as a factor, and the difference test of two designs' ratios

HALF = math.log(1.02)  # a CPU half 2 % faster than the other (issue 35's counterexample)
HALF_NOISE = 0.005  # the log ratios' noise beside it: the half is large against it
DUET_NS = (5, 6, 10, 30)  # 5: kick-the-tires (3 on one half, 2 on the other); the rest even, as a plan makes them


def duet_bounds(d: np.ndarray, h: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """stats.duet_ratio's model vectorised over data sets (rows of d), one layout h of +1/-1: least squares of
    d = mu + delta h + e is mu = (mean on +1 + mean on -1) / 2 with se = s / 2 sqrt(1/n+ + 1/n-), s^2 the pooled
    within-half variance on n - 2 df. Returns (mu, se, half-width on the log scale)."""
    up, down = d[:, h == 1], d[:, h == -1]
    mu = (up.mean(axis=1) + down.mean(axis=1)) / 2
    rss = ((up - up.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) + (
        (down - down.mean(axis=1, keepdims=True)) ** 2
    ).sum(axis=1)
    n = h.size
    se = np.sqrt(rss / (n - 2)) / 2 * math.sqrt(1 / up.shape[1] + 1 / down.shape[1])
    return mu, se, stats.t_quantile(level, n - 2) * se


def _duet_maps(d: np.ndarray, h: np.ndarray) -> tuple[dict, dict, dict]:
    keys = [("pi", "duet", j) for j in range(d.size)]
    num = {k: math.exp(x) for k, x in zip(keys, d, strict=True)}
    return num, dict.fromkeys(keys, 1.0), {k: int(x) for k, x in zip(keys, h, strict=True)}


@pytest.mark.parametrize("n", DUET_NS)
def test_the_duet_model_covers_and_the_unmodelled_interval_does_not(n):
    """Truth 1, a 2 % half effect, 0.5 % noise on the log ratios, the halves swapped every repetition: the model's
    interval covers 95 %; the paired t interval that leaves the half in the spread covers nearly always (its width
    is the half's, several times the noise's), so it is far outside the band: an interval that says little."""
    rng = _seed("duet", n)
    h = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    d = HALF * h + rng.normal(0, HALF_NOISE, (DRAWS, n))
    mu, se, half = duet_bounds(d, h)
    for i in range(CHECKED):  # the production function gives the same bounds
        iv = stats.duet_ratio(*_duet_maps(d[i], h), LEVEL)
        assert (iv.value, iv.low, iv.high) == pytest.approx(
            (math.exp(mu[i]), math.exp(mu[i] - half[i]), math.exp(mu[i] + half[i]))
        )
    covered = np.abs(mu) <= half
    plain = np.abs(d.mean(axis=1)) <= stats.t_quantile(LEVEL, n - 1) * d.std(axis=1, ddof=1) / math.sqrt(n)
    width = float(np.median(np.expm1(half)))
    plain_width = float(np.median(np.expm1(stats.t_quantile(LEVEL, n - 1) * d.std(axis=1, ddof=1) / math.sqrt(n))))
    c = record("duet, half modelled", n, "normal logs, 2 % half", covered, f"median ±{100 * width:.2f} %")
    p = record("duet, half unmodelled", n, "normal logs, 2 % half", plain, f"median ±{100 * plain_width:.2f} %")
    assert within_band(c), f"the duet's model covers {c:.3f} at n = {n}"
    assert p > BAND[1] and plain_width > 2 * width, f"unmodelled: {p:.3f}, ±{plain_width:.4f} against ±{width:.4f}"


@pytest.mark.parametrize(
    ("n_one", "n_duet", "noise_one", "noise_duet"),
    [(5, 6, 0.01, 0.005), (10, 10, 0.01, 0.01), (30, 30, 0.02, 0.005), (5, 5, 0.01, 0.01)],
)
def test_the_difference_test_of_two_designs_says_differ_about_5_percent_without_a_bias(
    n_one, n_duet, noise_one, noise_duet
):
    """The same truth measured by both designs (interleaved: paired t-log; duet: its model, with a 2 % half):
    stats.difference_test's false "differ" rate stays near 5 %; "the duet's value outside the interleaved
    interval", the rule it replaced, is printed beside it (16.6 % at equal widths and many repetitions). The
    table's column is the rate of "no detectable difference", the test's coverage."""
    from scipy import stats as sps

    rng = _seed("difference", n_one, n_duet)
    a = rng.normal(0, noise_one, (DRAWS, n_one))
    se_one = a.std(axis=1, ddof=1) / math.sqrt(n_one)
    h = np.where(np.arange(n_duet) % 2 == 0, 1.0, -1.0)
    d = HALF * h + rng.normal(0, noise_duet, (DRAWS, n_duet))
    mu, se_duet, _ = duet_bounds(d, h)
    var = se_one**2 + se_duet**2
    z = (mu - a.mean(axis=1)) / np.sqrt(var)
    df = var**2 / (se_one**4 / (n_one - 1) + se_duet**4 / (n_duet - 2))
    p = 2 * sps.t.sf(np.abs(z), df)
    for i in range(CHECKED):
        one = stats.paired_ratio(*_duet_maps(a[i], np.zeros(n_one))[:2], LEVEL, method="t")
        duet = stats.duet_ratio(*_duet_maps(d[i], h), LEVEL)
        assert stats.difference_test(duet, one) == pytest.approx((z[i], p[i]))
    outside = np.abs(mu - a.mean(axis=1)) > stats.t_quantile(LEVEL, n_one - 1) * se_one
    case = f"{n_one} interleaved, {n_duet} duet"
    wrong = float(np.mean(p < 1 - LEVEL))
    note = f"false differ {100 * wrong:.1f} %; outside-interval rule {100 * outside.mean():.1f} %"
    record("difference test (no bias)", n_duet, case, p >= 1 - LEVEL, note)
    assert 0.035 <= wrong <= 0.065, f"the difference test says differ {wrong:.3f} of the time with no bias ({case})"


# --- both edges of the exact and the Cox intervals: each bound against its textbook formula, written out here
# independently of stats.py, and Cox where its s^4 term matters (issue 50: a Clopper-Pearson at 90 % passed the
# conservative lower edge of coverage alone, and Cox without its s^4 term passed the band at sigma 0.5)


def _clopper_pearson_ratio(yn: int, en: float, yd: int, ed: float, level: float) -> tuple[float, float]:
    """Clopper & Pearson 1934 for p = Y_n / (Y_n + Y_d) given the total, each bound a beta quantile at alpha/2,
    mapped to the rate ratio R = p E_d / ((1 - p) E_n)."""
    from scipy import stats as sps

    a, t = (1 - level) / 2, yn + yd
    p_low = 0.0 if yn == 0 else float(sps.beta.ppf(a, yn, t - yn + 1))
    p_high = 1.0 if yn == t else float(sps.beta.ppf(1 - a, yn + 1, t - yn))
    to_r = lambda p: math.inf if p >= 1 else p * ed / ((1 - p) * en)  # noqa: E731
    return to_r(p_low), to_r(p_high)


@pytest.mark.parametrize(("yn", "yd"), [(0, 5), (3, 9), (40, 5), (120, 100), (7, 0)])
def test_the_exact_rate_interval_is_clopper_pearsons_at_both_edges(yn, yd):
    """Counts over five repetitions, each repetition the same (no overdispersion, so the exact interval is the one
    given): both bounds at 95 % equal Clopper-Pearson's, not those of another level."""
    n, e = 5, 1e6
    iv = stats.rate_ratio({j: stats.Count(yn, e) for j in range(n)}, {j: stats.Count(yd, e) for j in range(n)}, LEVEL)
    assert iv.method == "poisson-exact"
    low, high = _clopper_pearson_ratio(n * yn, n * e, n * yd, n * e, LEVEL)
    assert iv.low == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert iv.high == pytest.approx(high, rel=1e-9) if math.isfinite(high) else iv.high == math.inf


def test_the_cox_interval_is_olssons_modified_cox_at_both_edges():
    """Olsson 2005 ("Confidence intervals for the mean of a log-normal distribution", J. Stat. Educ. 13(1)):
    exp(ybar + s^2/2 -/+ t(n-1) sqrt(s^2/n + s^4 / (2(n-1)))), written out on one sample."""
    from scipy import stats as sps

    x = np.array([3.1, 0.7, 12.0, 1.9, 5.5, 0.4, 2.2])
    y, n = np.log(x), x.size
    s2, q = float(np.var(y, ddof=1)), float(sps.t.ppf(0.975, n - 1))
    half = q * math.sqrt(s2 / n + s2**2 / (2 * (n - 1)))
    iv = stats.mean_interval(x, LEVEL)
    assert iv.method == "cox-log"
    assert (iv.low, iv.high) == pytest.approx((math.exp(y.mean() + s2 / 2 - half), math.exp(y.mean() + s2 / 2 + half)))


def test_cox_covers_where_the_s4_term_matters():
    """Sigma 1 on logs, n = 30: the s^4 term is a third of the variance; without it the coverage falls to 89.6 %
    (measured), outside the band. With it, 94.5 % (this seed)."""
    rng, n = _seed("cox-wide", 30), 30
    x = 100.0 * np.exp(1.0 * rng.standard_normal((DRAWS, n)))
    low, high = stats.cox_log_bounds(np.log(x), LEVEL)
    truth = 100.0 * math.exp(0.5)
    c = record("mean, modified Cox on logs (cox-log)", n, "log-normal, sigma 1", (low <= truth) & (truth <= high))
    assert within_band(c), f"cox-log covers {c:.3f} at sigma 1, n = 30"
