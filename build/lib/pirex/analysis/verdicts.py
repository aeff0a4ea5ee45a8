"""The verdict words, written once: what a claim's verdict (pirex/reproduce/verdict.py) and an agreement across
devices (pirex/analysis/across.py) are, in REPORT.md, state.json's "verdicts" and the artifact's appendix.

Here, in the analysis layer, because across.agree() is the lowest code that decides one and the analysis layer does
not import pirex/reproduce (docs/design.md, "Layers")."""

from __future__ import annotations

HOLDS = "holds"
DIFFERS = "differs"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run here"  # a claim this machine, these bundles or this level cannot judge (reproduce only)
