"""The generic summary of a csv output (issue 54): the rows of one kind are averaged, never rows of different sizes
or labels, and each kind's metric is named by its key columns."""

from __future__ import annotations

import pytest

from pirex.analysis import generic
from pirex.core.errors import PirexError


def test_a_long_csv_gives_a_metric_per_value_of_its_keys(tmp_path):
    f = tmp_path / "out.csv"
    f.write_text("size_bytes,mb_per_s\n32768,30000\n33554432,10000\n")
    # the newcomer's table was one mb_per_s of 2.0e+04 and a size_bytes of 1.68e+07, the mean of both rows: now,
    # without keys declared, refused with the declaration to add; `keys: []` says the rows are repetitions
    with pytest.raises(
        PirexError, match=r"its rows differ in size_bytes, mb_per_s, whole numbers: .*`keys: \[size_bytes\]`"
    ):
        generic._csv_means(f)
    assert generic._csv_means(f, []) == {"size_bytes": 16793600.0, "mb_per_s": 20000.0}
    assert generic._csv_means(f, ["size_bytes"]) == {
        "mb_per_s[size_bytes=32768]": 30000.0,
        "mb_per_s[size_bytes=33554432]": 10000.0,
    }


def test_text_columns_are_keys_without_saying_and_rows_of_one_kind_are_averaged(tmp_path):
    f = tmp_path / "out.csv"
    f.write_text("buffer,iteration,mb_per_s\nsmall,1,30\nsmall,2,32\nlarge,1,10\nlarge,2,12\n")
    with pytest.raises(PirexError, match="its rows differ in iteration, mb_per_s, whole numbers"):
        generic._csv_means(f)  # within a label, whole numbers that differ: declared or refused
    assert generic._csv_means(f, []) == {
        "iteration[buffer=small]": 1.5,
        "mb_per_s[buffer=small]": 31.0,
        "iteration[buffer=large]": 1.5,
        "mb_per_s[buffer=large]": 11.0,
    }


def test_a_key_the_csv_lacks_is_named(tmp_path):
    f = tmp_path / "out.csv"
    f.write_text("size,mb_per_s\n1,2\n")
    with pytest.raises(PirexError, match=r"no column size_bytes \(the output's keys\); its columns: size, mb_per_s"):
        generic._csv_means(f, ["size_bytes"])


def test_measurements_that_are_not_whole_numbers_or_one_row_need_no_declaration(tmp_path):
    f = tmp_path / "out.csv"
    f.write_text("ns,ops\n1.5,7\n2.5,7\n")  # a row per iteration: ns varies, ops (whole) is the same in each
    assert generic._csv_means(f) == {"ns": 2.0, "ops": 7.0}
    f.write_text("value,size\n1,3\n")  # one row: nothing is averaged with anything
    assert generic._csv_means(f) == {"value": 1.0, "size": 3.0}
