"""`pirex reproduce PAPER`: a paper's claims (analysis/<paper>/claims.yaml), the runs they need on
this machine with the time up front, and a verdict per claim at a stated precision."""
