"""report.html and REPORT.md on verdicts made here with known numbers, and a resumed reproduction's timing (no
Docker): the page is valid HTML that fetches nothing, its top has the counts, each verdict its word and colour
class, each group of claims with an interval its embedded figure."""

import base64
import dataclasses
import fnmatch
import json
import re
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import html5lib
import numpy as np
import pytest

from pirex.analysis.interface import RunValue
from pirex.core.bundle import Bundle, iso
from pirex.core.paths import REPO
from pirex.reproduce import claims, plan, report, reproduction
from pirex.reproduce.state import ReproductionState
from pirex.reproduce.test_reproduce import _jmh_bundle
from pirex.reproduce.verdict import NOT_RUN, Verdict, judge, ours

NS = {"h": "http://www.w3.org/1999/xhtml"}


def _values(ratio: float, n: int, sd: float = 0.002, seed: int = 1) -> list[RunValue]:
    rng = np.random.default_rng(seed)
    out = []
    for rep in range(n):
        base = 100 * (1 + rng.normal(0, 0.05))
        sides = {"native": base, "docker": base * ratio * (1 + rng.normal(0, sd)), "native-aa": base}
        sides["native-aa"] *= 1 + rng.normal(0, sd)
        out += [RunValue("jmh", "b", "d", v, rep, "B1", x, "ops/s") for v, x in sides.items()]
    return out


def _verdicts() -> list[Verdict]:
    """icpe18's claims (its paper, sections and words) judged on made-up B1 values: one of each verdict."""
    by_id = {c.id: c for c in claims.load("icpe18").claims}
    side = {"numerator": claims.Side(("B1",), "docker"), "denominator": claims.Side(("B1",), "native")}
    b1 = dataclasses.replace(by_id["t1-b1-docker"], **side, rule="equivalent", margin=0.02, published=1.0)
    b3 = dataclasses.replace(by_id["t1-b3-not-inlined"], **side, rule="direction", margin=0.0, direction="less")
    t3 = dataclasses.replace(by_id["t3-read-docker"], **side, rule="within", tolerance=0.1, published=0.98)
    return [
        judge(b1, ours(b1, _values(1.0, 8), 0.95), None, True),  # holds: a narrow interval around 1
        judge(b3, ours(b3, _values(1.3, 8), 0.95), None, True),  # differs: the paper's side is below 1
        judge(t3, ours(t3, _values(1.0, 6, sd=0.2, seed=2), 0.95), None, True),  # inconclusive: too wide
        Verdict(by_id["t2-spass-docker"], NOT_RUN, "needs SPASS-meter (bring-your-own: its jar)"),
    ]


def _facts(**change) -> report.Facts:
    record = {
        "hostname": "vm",
        "cpu": {"model": "AMD EPYC", "cores": 2, "usable_cores": 2},
        "architecture": {"uname_machine": "x86_64"},
        "memory": {"total_bytes": 8 * 2**30, "swap_total_bytes": 0},
        "storage": {"work_dir": "/work/results", "kind": "virtio", "fstype": "ext4", "free_bytes": 50 * 2**30},
        "cpufreq": [{"cpu": 0, "governor": "ondemand"}, {"cpu": 1, "governor": "ondemand"}],  # as record() has it
    }
    images = [{"name": "jmh", "digest": "sha256:" + "ab" * 32, "platform": "linux/amd64", "origin": "built"}]
    base = report.Facts("Reproduction of icpe18", report.level_text("kick-the-tires"), [], record, "c0ffee", images)
    deviations = claims.deviations([claims.load("icpe18")])  # what reproduction.py gives the report
    return dataclasses.replace(base, took=432.0, attempts=2, deviations=deviations, **change)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    verdicts = _verdicts()
    need = plan.Need("jmh", None, "quick", ["native", "docker"], claims=["t1-b1-docker", "t1-b3-not-inlined"])
    md, page = report.write(out, _facts(), verdicts, [need], {"pmu": "no performance counters here"})
    return verdicts, md.read_text(), page.read_text()


def _dom(page: str):
    return html5lib.parse(page, namespaceHTMLElements=True)


def _text(e) -> str:
    return "".join(e.itertext()).strip()


def test_the_page_is_valid_html_and_fetches_nothing(written):
    _, _, page = written
    html5lib.HTMLParser(strict=True).parse(page)  # raises on any parse error
    sources = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert sources and all(s.startswith(("data:", "#")) for s in sources)
    assert "url(" not in page and "@import" not in page
    assert "@page { size: A4" in page and "@media print" in page


def test_the_top_has_the_counts_the_machine_the_commit_the_images_the_level_and_the_time(written):
    verdicts, _, page = written
    body = _dom(page).find("h:body", NS)
    header = body.find("h:header", NS)
    counts = {
        li.get("class").split()[-1]: int(_text(li.find("h:span", NS))) for li in header.find("h:ul", NS)
    }  # the first list on the page
    assert counts == {"v-holds": 1, "v-differs": 1, "v-inconclusive": 1, "v-not-run": 1}
    facts = {_text(tr.find("h:th", NS)): _text(tr.find("h:td", NS)) for tr in header.iter(f"{{{NS['h']}}}tr")}
    assert facts["Level"].startswith("kick-the-tires (quick profiles)")
    assert facts["Cores"] == "2" and facts["Governor"] == "ondemand" and "8.0 GiB" in facts["Memory"]
    assert facts["Storage"].startswith("/work/results: virtio ext4") and facts["Commit"] == "c0ffee"
    assert "sha256:" + "ab" * 32 in facts["Images"] and facts["Time taken"] == "7 min 12 s over 2 attempts (--resume)"


def test_each_verdict_is_a_word_and_a_colour_class(written):
    verdicts, _, page = written
    cells = [td for td in _dom(page).iter(f"{{{NS['h']}}}td") if "verdict" in (td.get("class") or "").split()]
    assert len(cells) == len(verdicts)
    for td, v in zip(cells, verdicts, strict=True):
        assert report.CLASS[v.verdict] in td.get("class").split() and _text(td).startswith(report.MARK[v.verdict])
    for cls in report.CLASS.values():
        assert re.search(rf"\.{cls} \{{ color: var\(--[a-z-]+\); background: #", page)  # each class has its colour


def test_each_claim_opens_to_the_papers_words_the_rule_the_runs_and_what_would_decide_it(written):
    verdicts, _, page = written
    details = list(_dom(page).iter(f"{{{NS['h']}}}details"))
    assert len(details) == len(verdicts)
    first, _, wide, _ = (_text(d) for d in details)
    assert verdicts[0].claim.says[:40] in first and "Table 1" in first and "lies within 1 ±2 %" in first
    assert "jmh@quick" in first
    assert "What would decide it" in wide and "more repetitions would decide it" in wide


def test_a_group_with_an_interval_has_its_figure_embedded_and_one_without_says_why(written):
    _, md, page = written
    dom = _dom(page)
    figures = [img for img in dom.iter(f"{{{NS['h']}}}img") if img.get("src", "").startswith("data:image/png;base64,")]
    assert len(figures) == 2  # Table 1 and Table 3; Table 4 has no interval
    for img in figures:
        assert base64.b64decode(img.get("src").split(",", 1)[1]).startswith(b"\x89PNG")
    assert "No interval to draw here: needs SPASS-meter" in page
    assert "![icpe18, Table 1: our intervals against the paper's](figures/icpe18-table-1.png)" in md


def test_markdown_is_rendered_and_the_plain_text_twin_has_the_same_content(written):
    verdicts, md, page = written
    assert "<code>" in page and "| --- |" not in page and "**" not in page  # no raw Markdown on the page
    assert "Verdicts: 1 holds, 1 differs, 1 inconclusive, 1 not run here" in md
    for v in verdicts:
        assert f"{v.claim.paper}:{v.claim.id}" in md and f"{v.claim.paper}:{v.claim.id}" in page
    for text in ("## What this machine cannot do", "- pmu: no performance counters here", "## Deviations from"):
        assert text in md
    assert "no performance counters here" in page and "Java 17" in page
    assert "- Time taken: 7 min 12 s over 2 attempts" in md and "- Governor: ondemand" in md


def test_the_summary_says_how_long_the_run_took():
    text = report.summary(_verdicts(), Path("R.md"), took=432.0, attempts=2)
    assert text.splitlines()[-2].endswith("1 not run here in 7 min 12 s over 2 attempts (--resume)")
    assert len(text.splitlines()) <= 25


def test_the_template_ships_as_package_data():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = [p for pattern in config["pirex.reproduce"] for p in (REPO / "pirex/reproduce").glob(pattern)]
    assert REPO / "pirex/reproduce/templates/report.html" in shipped
    assert all(fnmatch.fnmatch(p.name, "*.html") for p in shipped)


def test_a_resumed_reproduction_keeps_its_estimates_and_adds_up_every_attempts_time(tmp_path, monkeypatch):
    """Killed twice (SIGKILL: nothing saved after the run under way started), resumed twice: the first plan's
    estimate of a run finished before a kill stays, and a run's time is each attempt's part of it added up."""
    results, clock = tmp_path / "results", [1_000_000.0]
    monkeypatch.setattr(plan, "calibration_score", lambda: 8810138.0)
    monkeypatch.setattr(reproduction, "monotonic", lambda: clock[0])
    monkeypatch.setattr(reproduction, "time", lambda: clock[0])
    opts = dict(results_dir=results, experiments=["jmh", "moobench"])

    class Killed(BaseException):
        pass

    def first(need, opts):  # jmh: two steps done in 40 s of its run, then the machine goes
        bundle = _jmh_bundle(results, 5)
        m = json.loads((bundle / "manifest.json").read_text())
        complete = json.dumps(m)
        ended = iso(datetime.fromtimestamp(clock[0] + 40, tz=UTC))
        m.update(status="running", ended=None, completed=[dict(s, ended=ended) for s in m["completed"][:2]])
        (bundle / "manifest.json").write_text(json.dumps(m))
        (tmp_path / "complete.json").write_text(complete)
        clock[0] += 55  # killed 15 s into its third step
        raise Killed

    with pytest.raises(Killed):
        reproduction.reproduce(reproduction.Options(["icpe18"], **opts), first, echo=lambda *_: None)
    (out,) = (results / "reproduce").glob("icpe18-*")
    estimate = ReproductionState.read(out).estimates["jmh@quick"]
    clock[0] += 3600  # an hour before anyone resumes it: not the reproduction's time

    def second(need, opts):  # jmh finishes in 30 s; moobench is killed after 20 s
        if need.experiment == "jmh":
            (bundle,) = (p.parent for p in results.glob("jmh/*/manifest.json"))
            (bundle / "manifest.json").write_text((tmp_path / "complete.json").read_text())
            clock[0] += 30
            return bundle
        clock[0] += 20
        raise Killed

    with pytest.raises(Killed):
        reproduction.reproduce(reproduction.Options([], resume=out, **opts), second, echo=lambda *_: None)
    clock[0] += 600

    tried = []

    def third(need, opts):
        tried.append(need.key)
        assert need.experiment == "moobench"  # jmh's bundle is done
        clock[0] += 5
        raise reproduction.PirexError("no moobench here")

    lines = []
    reproduction.reproduce(reproduction.Options([], resume=out, **opts), third, echo=lines.append)
    state = ReproductionState.read(out)
    assert state.estimates["jmh@quick"] == estimate and estimate > 0  # the first plan's, not "unknown"
    assert state.ran["jmh@quick"] == pytest.approx(40 + 30)  # to its last step before the kill, then the rest
    # every attempt up to what it recorded last: moobench's 20 s before the second kill left no trace
    assert len(state.attempts) == 3 and reproduction.time_taken(state) == pytest.approx(40 + 30 + 5 * len(tried))
    md = (out / "REPORT.md").read_text()
    assert f"| jmh@quick | {estimate / 60:.1f} min | 1.2 min |" in md
    assert "over 3 attempts" in lines[-1].splitlines()[-2]


def test_a_reproductions_page_has_each_runs_tables_beside_the_published_ones(tmp_path):
    results = tmp_path / "results"
    bundle = _jmh_bundle(results, 6)
    opts = reproduction.Options(["icpe18"], results_dir=results, reuse_only=True, experiments=["jmh"])
    out = reproduction.reproduce(opts, run_one=None, echo=lambda *_: None)
    page = (out / "report.html").read_text()
    html5lib.HTMLParser(strict=True).parse(page)
    run = _dom(page).find(".//h:section[@id='run-jmh-quick']", NS)
    captions = [_text(c) for c in run.iter(f"{{{NS['h']}}}caption")]
    assert any("Table 1" in c for c in captions) and "icpe18: table1.csv as published" in captions
    facts = _dom(page).find(".//h:table[@class='facts']", NS)
    assert not Bundle.open(bundle).images and "Imagesnone recorded" in _text(facts)  # made here: none
    assert "icpe18:t3-read-docker" in page and "was not among the experiments asked (--experiment)" in page


@pytest.mark.parametrize(
    "where, section",
    [
        ("Table 5, Id 3 (parallel GC), and section 5", "Table 5"),
        ('section 6.1.2.1 ("Both systems exhibit a consistent increase, as memory grows"), Figure 6.5', "section 6.1"),
        ("sections 6.1.1.4 and 6.1.2.4, Figures 6.4 and 6.8", "section 6.1"),
        ("section 3, Kieker's three configurations", "section 3"),
        ("the conclusion, last paragraph", "the conclusion"),
    ],
)
def test_claims_are_grouped_by_the_papers_table_or_section(where, section):
    assert report.section_of(where) == section
