"""The cells' text every analysis module shares: numbers, an interval's bounds, a ratio."""

import math

from pirex.analysis import stats
from pirex.analysis import tables as T


def test_numbers_and_bounds():
    assert T.number(1234.56) == "1,234.6" and T.number(2, 3) == "2.000"
    assert T.number(None) == T.number(math.nan) == "n/a"
    assert T.bounds((1.0, 2.25), 2) == "[1.00; 2.25]"
    assert T.bounds((1.0, 2.25), 1, " ; ") == "[1.0 ; 2.2]", "Table 3's layout"
    assert T.bounds((math.nan, math.nan)) == "n/a"


def test_a_ratio_says_why_it_has_no_interval():
    assert T.ratio_text(stats.Interval(1.0034, 0.99, 1.015, 5, 0.95, "t-log")) == "1.003 [0.990; 1.015]"
    assert T.ratio_text(stats.Interval(1.0034, 0.99, 1.015, 5, 0.95, "t-log"), sep=" ; ") == "1.003 [0.990 ; 1.015]"
    short = stats.Interval(1.5, None, None, 3, 0.95, "none", stats.too_few(3, "loops"))
    assert T.ratio_text(short) == "1.500 (no interval: 3 loops, 5 needed)"
