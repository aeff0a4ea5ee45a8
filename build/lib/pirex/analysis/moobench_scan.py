"""The numba engine of the MooBench reader: one compiled pass over a raw file's bytes.

It takes MooBench's output as its harness writes it, ``<thread id>;<duration ns>[;<anything>]`` per line, with
empty lines, ``#`` comment lines and CRLF line ends allowed, and returns the thread ids and durations as int64
arrays. A line it does not take (a thread name that is no integer, a sign, a number of more than 18 digits, a
missing field) makes it give up on the whole file and return None: the numpy engine then reads the file and, where
the file is damaged, names the problem. It needs the optional ``fast`` extra (numba; no armv7 wheels). numba
compiles the scanner on first use and caches the machine code (``__pycache__`` beside this file, or numba's
per-user cache where that is not writable), so only the first run after an install pays for the compilation.
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

_NL, _CR, _SEMI, _HASH, _ZERO, _NINE = 10, 13, 59, 35, 48, 57
MAX_DIGITS = 18  # below 2**63: no overflow in int64


@numba.njit(nogil=True, cache=True)
def _scan(b: np.ndarray, start: int, threads: np.ndarray, durations: np.ndarray) -> tuple[int, int]:
    """Fill threads[:n] and durations[:n] from b[start:]; return (n, -1), or (n, offset of the line it gave up on).
    The digit loops are written out twice (thread, duration): as a function they cost a third more time."""
    size = b.size
    i = start
    n = 0
    while i < size:
        line = i
        c = b[i]
        if c == _NL:
            i += 1
            continue
        if c == _CR or c == _HASH:  # a CRLF empty line or a comment: skipped whole
            if c == _CR and (i + 1 >= size or b[i + 1] != _NL):  # a lone CR ends a line for numpy: not ours
                return n, line
            i += 1
            while i < size and b[i] != _NL and b[i] != _CR:
                i += 1
            if i < size and b[i] == _CR:
                if i + 1 >= size or b[i + 1] != _NL:
                    return n, line
                i += 1
            i += 1
            continue
        t = 0
        while i < size:
            digit = np.uint64(b[i]) - np.uint64(_ZERO)  # one comparison: below '0' wraps around
            if digit > 9:
                break
            t = t * 10 + np.int64(digit)
            i += 1
        if i == line or i - line > MAX_DIGITS or i >= size or b[i] != _SEMI:
            return n, line
        i += 1
        first = i
        d = 0
        while i < size:
            digit = np.uint64(b[i]) - np.uint64(_ZERO)
            if digit > 9:
                break
            d = d * 10 + np.int64(digit)
            i += 1
        if i == first or i - first > MAX_DIGITS:
            return n, line
        if i < size and b[i] != _SEMI and b[i] != _NL and b[i] != _CR:
            return n, line
        while i < size and b[i] > _CR:  # the columns after the duration are not read; stops at CR, LF, tab, ...
            i += 1
        if i < size and b[i] != _NL:
            if b[i] != _CR or i + 1 >= size or b[i + 1] != _NL:
                return n, line
            i += 1
        threads[n] = t
        durations[n] = d
        n += 1
        i += 1
    return n, -1


def scan(path: Path, start: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """(thread ids, durations) of the lines after byte `start`, or None when a line is not of the simple form."""
    b = np.fromfile(path, dtype=np.uint8)
    rows = b.size // 4 + 1  # the shortest line, "1;2\n", has 4 bytes; np.empty touches no page it does not fill
    threads, durations = np.empty(rows, np.int64), np.empty(rows, np.int64)
    n, gave_up = _scan(b, start, threads, durations)
    if gave_up >= 0:
        return None
    return threads[:n], durations[:n]
