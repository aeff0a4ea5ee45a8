"""The rules a claim is judged by, one class each: its band, its regions (holds, differs, neither), where they meet
(the edges a plan measures its distance to), the "differs" region as one-sided pieces for its p-value, and its
wording in a verdict's reason and the report. claims.py reads a claim's rule by name from REGISTRY; verdict.py and
report.py ask the claim's rule (Claim.rule_kind) and never switch on its name. A new rule is one class
here, registered, and its name in claims.schema.json's description.

Every rule is three disjoint regions of the interval (../shared/STATISTICS.md, "Rules as regions"; the table in
verdict.py's docstring). A region that is one side of an edge, or inside a band (two one-sided tests), is read off
the narrow 1 - 2 alpha interval [low, high]; a region that is either of two sides (wholly outside a band) off the
wide 1 - alpha one [wlow, whigh], alpha/2 a side. regions() takes floats or numpy arrays of many intervals."""

from __future__ import annotations

from typing import ClassVar, Protocol

from pirex.analysis.verdicts import HOLDS


class Claim(Protocol):
    """What a rule reads of a claim (claims.Claim): the numbers claims.yaml gives with the rule."""

    published: float | None
    direction: str | None
    tolerance: float
    margin: float
    edge: float


Parts = tuple[str, tuple[tuple[float, str], ...]]  # how the pieces combine (one, union, inside); (edge, side) each


class Rule:
    """A rule's name and what claims.yaml must give with it; its regions and words for a claim (the claim carries
    the rule's numbers: published value, tolerance, margin, edge, direction)."""

    name: ClassVar[str]
    margined: ClassVar[bool] = False  # needs a margin (and no rule else takes one)
    directed: ClassVar[bool] = False  # a published direction alone can judge it (no value needed)
    words_only: ClassVar[bool] = False  # may stand on the paper's words, without a published value or direction
    tolerance: ClassVar[bool] = False  # needs a tolerance around the paper's value
    edged: ClassVar[bool] = False  # needs an edge of its own (beyond)

    def band(self, c: Claim) -> tuple[float, float] | None:
        """The interval the rule measures ours against, margins symmetric on the log scale (a/b and b/a give the same
        verdict), or None where its only edge is 1."""
        return None

    def edges(self, c: Claim) -> tuple[float, ...]:
        """The ratios where the regions meet: what an interval must clear to decide."""
        a, b = self.band(c)
        return tuple(sorted({a, b}))

    def regions(self, c: Claim, low, high, wlow, whigh):
        """(holds, differs) for the narrow interval [low, high] and the wide one [wlow, whigh]."""
        raise NotImplementedError

    def differs_parts(self, c: Claim) -> Parts:
        """The "differs" region as one-sided pieces (edge, "above" | "below") and how they combine: "one" (a single
        side), "union" (either side, each at alpha/2), "inside" (both: above the low edge and below the high one)."""
        raise NotImplementedError

    def region_text(self, c: Claim, verdict: str, i) -> str:
        """Where the interval i lies, for a verdict that holds or differs."""
        raise NotImplementedError

    def crossing_text(self, c: Claim) -> str:
        """Where an inconclusive interval lies: across an edge."""
        return f"crosses an edge of {self.band_text(c)}"

    def words(self, c: Claim, level: str) -> str:
        """The rule in plain words for the report, its interval at `level` ("90 %")."""
        raise NotImplementedError

    def drawn(self, c: Claim, far: float) -> tuple[float, float] | None:
        """The ratios the rule accepts, drawn as a band (far: where "the paper's side of 1" ends), or None."""
        return self.band(c)

    def published_text(self, c: Claim) -> str | None:
        """The paper's value as the report shows it, where the rule says it its own way."""
        return None

    def band_text(self, c: Claim) -> str:
        a, b = self.band(c)
        return f"1 ±{100 * c.margin:g} % ([{a:.4g}; {b:.4g}])"


class Direction(Rule):
    name, directed = "direction", True

    def edges(self, c: Claim) -> tuple[float, ...]:
        return (1.0,)

    def regions(self, c: Claim, low, high, wlow, whigh):
        above, below = low > 1, high < 1
        return (above, below) if c.direction == "greater" else (below, above)

    def differs_parts(self, c: Claim) -> Parts:
        return "one", ((1.0, "below" if c.direction == "greater" else "above"),)

    def region_text(self, c: Claim, verdict: str, i) -> str:
        return "lies on the paper's side of 1" if verdict == HOLDS else "lies on the other side of 1"

    def crossing_text(self, c: Claim) -> str:
        return "contains 1"

    def words(self, c: Claim, level: str) -> str:
        side = "above" if c.direction == "greater" else "below"
        return (
            f"holds when our {level} interval lies wholly {side} 1, the paper's side; differs when it lies wholly on "
            "the other side; inconclusive when it contains 1"
        )

    def drawn(self, c: Claim, far: float) -> tuple[float, float] | None:
        return (1.0, far) if c.direction == "greater" else (far, 1.0)


class _Inside(Rule):
    """A band the interval must lie inside to hold, wholly outside (either side) to differ."""

    def regions(self, c: Claim, low, high, wlow, whigh):
        a, b = self.band(c)
        return (a <= low) & (high <= b), (whigh < a) | (wlow > b)

    def differs_parts(self, c: Claim) -> Parts:
        a, b = self.band(c)
        return "union", ((b, "above"), (a, "below"))

    def region_text(self, c: Claim, verdict: str, i) -> str:
        where = "within" if verdict == HOLDS else "outside"
        return f"lies {where} {self.band_text(c)}" + self._meaning(verdict)

    def _meaning(self, verdict: str) -> str:
        return ""


class Equivalent(_Inside):
    name, margined = "equivalent", True

    def band(self, c: Claim) -> tuple[float, float] | None:
        m = 1 + c.margin
        return 1 / m, m

    def _meaning(self, verdict: str) -> str:
        return ": no change beyond the margin" if verdict == HOLDS else ": a change beyond the margin"

    def words(self, c: Claim, level: str) -> str:
        a, b = self.band(c)
        return (
            f"no change: holds when our {level} interval lies within 1 ±{100 * c.margin:g} % ([{a:.4g}; {b:.4g}]); "
            "differs when it lies wholly outside; inconclusive otherwise"
        )


class Within(_Inside):
    name, tolerance = "within", True

    def band(self, c: Claim) -> tuple[float, float] | None:
        if c.published is None:
            return None
        t = 1 + c.tolerance
        return c.published / t, c.published * t

    def band_text(self, c: Claim) -> str:
        a, b = self.band(c)
        return f"the paper's {c.published:.3f} ±{100 * c.tolerance:g} % ([{a:.3f}; {b:.3f}])"

    def words(self, c: Claim, level: str) -> str:
        a, b = self.band(c)
        return (
            f"holds when our {level} interval lies within ±{100 * c.tolerance:g} % of the paper's {c.published:.3f} "
            f"([{a:.4g}; {b:.4g}]); differs when it lies wholly outside; inconclusive otherwise"
        )


class Different(Rule):
    name, margined, words_only = "different", True, True

    def band(self, c: Claim) -> tuple[float, float] | None:
        m = 1 + c.margin
        return 1 / m, m

    def regions(self, c: Claim, low, high, wlow, whigh):
        a, b = self.band(c)
        return (whigh < a) | (wlow > b), (a <= low) & (high <= b)

    def differs_parts(self, c: Claim) -> Parts:
        a, b = self.band(c)
        return "inside", ((a, "above"), (b, "below"))

    def region_text(self, c: Claim, verdict: str, i) -> str:
        if verdict == HOLDS:
            way = "lower" if i.high < 1 else "higher"
            return f"lies outside {self.band_text(c)}: {way} by {100 * abs(i.value - 1):.0f} %"
        return f"lies within {self.band_text(c)}: no change beyond the margin"

    def words(self, c: Claim, level: str) -> str:
        a, b = self.band(c)
        return (
            f"a change beyond ±{100 * c.margin:g} % either way: holds when our {level} interval lies wholly outside "
            f"[{a:.4g}; {b:.4g}] (its direction said); differs when it lies within it; inconclusive otherwise"
        )

    def drawn(self, c: Claim, far: float) -> tuple[float, float] | None:
        return None  # anything outside its band


class DirectionAtMost(Rule):
    name, margined, directed = "direction-at-most", True, True

    def band(self, c: Claim) -> tuple[float, float] | None:
        m = 1 + c.margin  # (1, 1+m) for greater, (1/(1+m), 1) for less
        return (1.0, m) if c.direction == "greater" else (1 / m, 1.0)

    def _edge(self, c: Claim) -> float:
        a, b = self.band(c)
        return a if c.direction == "less" else b

    def regions(self, c: Claim, low, high, wlow, whigh):
        a, b = self.band(c)
        if c.direction == "greater":
            return (low > 1) & (high <= b), (whigh < 1) | (wlow > b)
        return (high < 1) & (low >= a), (wlow > 1) | (whigh < a)

    def differs_parts(self, c: Claim) -> Parts:
        a, b = self.band(c)
        return "union", (((1.0, "below"), (b, "above")) if c.direction == "greater" else ((1.0, "above"), (a, "below")))

    def region_text(self, c: Claim, verdict: str, i) -> str:
        edge = self._edge(c)
        if verdict == HOLDS:
            return f"lies between 1 and {edge:.4g}: the paper's side, by at most {100 * c.margin:g} %"
        if (c.direction == "less" and i.low > 1) or (c.direction == "greater" and i.high < 1):
            return "lies on the other side of 1"
        return f"lies beyond {edge:.4g}: an effect larger than {100 * c.margin:g} %"

    def crossing_text(self, c: Claim) -> str:
        return f"crosses 1 or {self._edge(c):.4g}"

    def words(self, c: Claim, level: str) -> str:
        edge = self._edge(c)
        return (
            f"holds when our {level} interval lies between 1 and {edge:.4g}, the paper's side by at most "
            f"{100 * c.margin:g} %; differs when it lies wholly on the other side of 1 or beyond {edge:.4g}; "
            "inconclusive otherwise"
        )


class Beyond(Rule):
    name, words_only, edged = "beyond", True, True

    def band(self, c: Claim) -> tuple[float, float] | None:
        return c.edge, c.edge

    def edges(self, c: Claim) -> tuple[float, ...]:
        return (c.edge,)

    def regions(self, c: Claim, low, high, wlow, whigh):
        a = c.edge
        return ((low > a), (high < a)) if a > 1 else ((high < a), (low > a))

    def differs_parts(self, c: Claim) -> Parts:
        e = c.edge
        return "one", ((e, "above" if e < 1 else "below"),)

    def _sides(self, c: Claim) -> tuple[str, str]:
        return ("below", "above") if c.edge < 1 else ("above", "below")

    def region_text(self, c: Claim, verdict: str, i) -> str:
        side, other = self._sides(c)
        return f"lies wholly {side if verdict == HOLDS else other} {c.edge:g}"

    def crossing_text(self, c: Claim) -> str:
        return f"contains {c.edge:g}"

    def words(self, c: Claim, level: str) -> str:
        side, other = self._sides(c)
        return (
            f"an effect past {c.edge:g}: holds when our {level} interval lies wholly {side} {c.edge:g}; differs when "
            f"it lies wholly {other} it; inconclusive when it contains {c.edge:g}"
        )

    def drawn(self, c: Claim, far: float) -> tuple[float, float] | None:
        return (c.edge, far) if c.edge > 1 else (far, c.edge)

    def published_text(self, c: Claim) -> str | None:
        return f"{'<' if c.edge < 1 else '>'} {c.edge:g}"


WITHIN, DIRECTION, EQUIVALENT, DIRECTION_AT_MOST, DIFFERENT, BEYOND = (
    Within(),
    Direction(),
    Equivalent(),
    DirectionAtMost(),
    Different(),
    Beyond(),
)
# the rules by name, in the order claims.yaml's errors list them
REGISTRY: dict[str, Rule] = {r.name: r for r in (WITHIN, DIRECTION, EQUIVALENT, DIRECTION_AT_MOST, DIFFERENT, BEYOND)}
MARGINED = tuple(n for n, r in REGISTRY.items() if r.margined)  # the rules that need a margin
