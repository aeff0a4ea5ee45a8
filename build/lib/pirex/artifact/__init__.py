"""What an artifact evaluation committee takes away (docs/artifact.md): `pirex artifact PAPER OUT` packs it
(pack.py), with its appendix ARTIFACT.md (appendix.py); `pirex artifact --check` is the badge self-check (check.py)."""
