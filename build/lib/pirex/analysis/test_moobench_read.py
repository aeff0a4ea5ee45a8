"""The MooBench raw reader: layout, header, threads, the steady-state rule, and both engines alike."""

from pathlib import Path

import numpy as np
import pytest

from pirex.analysis import moobench_read as mr
from pirex.core.errors import PirexError

DATA = Path(__file__).parent / "testdata" / "moobench"
ENGINES = [
    "numpy",
    pytest.param("numba", marks=pytest.mark.skipif(not mr.has_numba(), reason="numba (the fast extra) missing")),
]


@pytest.mark.parametrize("engine", ENGINES)
def test_handmade_raw_file_odd_count(engine):
    # 7 calls: the first 4 (ceil(7/2)) are warm-up, the last 3 (7 // 2) the steady state
    lp = mr.read_loop(DATA / "raw-handmade.csv", engine)
    assert lp.steady.tolist() == [1000, 2000, 3000] and lp.steady.dtype == np.int64
    assert lp.calls == (7,) and lp.steady_from == 4
    assert lp.blocks.tolist() == [35000 / 7]  # one block of 1,000 calls (a short one) over the whole loop


@pytest.mark.parametrize("engine", ENGINES)
def test_header_and_comment_lines_are_skipped(engine):
    a, b = mr.read_loop(DATA / "raw-handmade.csv", engine), mr.read_loop(DATA / "raw-header.csv", engine)
    assert a.steady.tolist() == b.steady.tolist() and a.blocks.tolist() == b.blocks.tolist()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_comment_line_anywhere_is_skipped(engine, where, tmp_path):
    lines = (DATA / "raw-handmade.csv").read_text().splitlines()
    at = {"first": 0, "middle": 3, "last": len(lines)}[where]
    lines.insert(at, "# a note;1;2;3")
    f = tmp_path / "raw-baseline.csv"
    f.write_text("\n".join(lines) + "\n")
    assert mr.read_loop(f, engine).steady.tolist() == [1000, 2000, 3000]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["raw-threads.csv", "raw-named.csv"])
def test_second_half_per_thread(engine, name, monkeypatch):
    monkeypatch.setattr(mr, "BLOCK", 2)
    lp = mr.read_loop(DATA / name, engine)
    # thread A: 50 40 10 20 30 -> last 5 // 2 = 2 calls; thread B: 400 300 100 200 -> last 2
    assert lp.steady.tolist() == [20, 30, 100, 200]
    assert lp.calls == (5, 4) and lp.steady_from == 3
    # blocks of 2 per thread: A 45, 15, (30); B 350, 150 -> averaged over the blocks both threads have
    assert lp.blocks.tolist() == [197.5, 82.5]


def test_a_single_call_has_no_steady_state(tmp_path):
    f = tmp_path / "raw-x.csv"
    f.write_text("1;500;0;0\n")
    for engine in ("numpy", "numba") if mr.has_numba() else ("numpy",):
        assert mr.read_loop(f, engine).steady.size == 0


def test_not_moobench_and_unknown_engine(tmp_path):
    f = tmp_path / "raw-x.csv"
    f.write_text("just text\n")
    with pytest.raises(PirexError, match="thread;duration_ns"):
        mr.read_loop(f, "numpy")
    with pytest.raises(PirexError, match="unknown reader engine"):
        mr.read_loop(DATA / "raw-handmade.csv", "awk")


@pytest.mark.skipif(not mr.has_numba(), reason="numba (the fast extra) missing")
def test_both_engines_agree_on_generated_files(tmp_path):
    rng = np.random.default_rng(7)
    for i, threads in enumerate((1, 3)):
        n = 10_001
        t = np.repeat(np.arange(1, threads + 1), n)
        d = rng.lognormal(8, 1, t.size).astype(np.int64)
        f = tmp_path / f"raw-{i}.csv"
        np.savetxt(f, np.column_stack([t, d, d * 3, d % 2]), fmt="%d", delimiter=";")
        a, b = mr.read_loop(f, "numpy"), mr.read_loop(f, "numba")
        assert np.array_equal(a.steady, b.steady) and np.array_equal(a.blocks, b.blocks)
        assert a.calls == b.calls == (n,) * threads
        assert a.steady.size == threads * (n // 2)


needs_numba = pytest.mark.skipif(not mr.has_numba(), reason="numba (the fast extra) missing")


@needs_numba
@pytest.mark.parametrize(
    "text",
    [
        "1;10;5;0\n2;20;5;0\n1;30;5;0\n",  # threads taking turns
        "1;10\n1;20\n1;30",  # two columns, no newline at the end
        "\n1;10;5;0\r\n\r\n# note\n1;20;5;0\r\n1;30;5;0\n\n",  # CRLF, empty and comment lines
        "007;000000000000000010;x;y\n7;20;;\n",  # leading zeros, 18 digits, empty columns after the duration
    ],
)
def test_scanner_reads_the_simple_form_exactly(text, tmp_path):
    from pirex.analysis import moobench_scan

    f = tmp_path / "raw-x.csv"
    f.write_bytes(text.encode())
    threads, durations = moobench_scan.scan(f)
    numpy_threads, numpy_durations = mr._parse_numpy(f, 0)
    assert durations.tolist() == numpy_durations.tolist()
    assert threads.tolist() == ([int(x.split(";")[0]) for x in text.split() if x[0].isdigit()])
    assert numpy_threads.tolist() == threads.tolist()


@needs_numba
@pytest.mark.parametrize(
    "text",
    [
        "main;10;5;0\n",  # a thread name: the numpy engine's job
        "1;10;5;0\n1;-20;5;0\n",  # a sign
        "1;10;5;0\n1;1234567890123456789;5;0\n",  # 19 digits: would overflow int64
        "1;10;5;0\n1 ;20;5;0\n",  # a blank inside a line
        "1;10;5;0\n1;20x;5;0\n",  # not a number
        "1;10;5;0\n1\n",  # one column
        "1;10;5;0\r1;20;5;0\n",  # a lone CR
        "1;10;5;0\n# note\r1;20;5;0\n",  # a lone CR in a comment
        "1;10;5\t0\n",  # a tab
    ],
)
def test_scanner_gives_up_on_anything_else(text, tmp_path):
    from pirex.analysis import moobench_scan

    f = tmp_path / "raw-x.csv"
    f.write_bytes(text.encode())
    assert moobench_scan.scan(f) is None


@needs_numba
def test_numba_engine_hands_other_files_to_numpy_which_names_the_problem(tmp_path):
    named = mr.read_loop(DATA / "raw-named.csv", "numba")  # thread names: read by the numpy engine
    assert named.calls == (5, 4)
    f = tmp_path / "raw-x.csv"
    f.write_text("1;10;5;0\n1;20x;5;0\n")
    for engine in ("numba", "numpy"):
        with pytest.raises(PirexError, match=r"raw-x.csv: not MooBench's .*'20x'"):
            mr.read_loop(f, engine)


@needs_numba
def test_scanner_starts_after_the_header(tmp_path):
    header = mr._header_end(DATA / "raw-header.csv")
    assert header == len(b"thread;duration_ns;used_heap;gc_count_delta\n")
    assert mr._header_end(DATA / "raw-handmade.csv") == 0
