"""Reading result bundles into one tidy table, the papers' statistics, and their tables.
Needs the analysis extra (numpy, scipy): pip install -e '.[analysis]' (make does it)."""
