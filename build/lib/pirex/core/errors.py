"""The one exception type the CLI turns into a clear message and a non-zero exit."""


class PirexError(Exception):
    """A problem the user can act on: the message names it and says what to do."""


def describe(e: BaseException, argv: list[str] = ()) -> str:
    """One line for an exception that is not a PirexError (the CLI's last resort): what failed, the
    file it was reading when that can be told, and what to try."""
    import errno
    from pathlib import Path

    if isinstance(e, OSError) and e.strerror:
        fixes = {
            errno.ENOSPC: "free some space, or pick another directory",
            errno.EACCES: "run pirex as a user who may, or pick another path",
            errno.EPERM: "run pirex as root (sudo), or pick another path",
            errno.ENOENT: "check the path",
            errno.EEXIST: "name a directory that is not a file",
            errno.ENOTDIR: "a file stands where a directory is needed: name a directory",
            errno.EISDIR: "name a file, not a directory",
            errno.EROFS: "pick a writable place",
        }
        where = f"{e.filename}: " if e.filename else ""
        return f"{where}{e.strerror}" + (f": {fixes[e.errno]}" if e.errno in fixes else "")
    text = " ".join(str(e).split())[:300] or "(no message)"
    reading = _file_being_read(e)
    msg = f"{type(e).__name__}: {text}" + (f" (while reading {reading})" if reading else "")
    bundles = [a for a in argv if (Path(a) / "manifest.json").is_file()]
    if reading and not bundles:  # the bundle the file belongs to
        bundles = [str(d) for d in reading.parents if (d / "manifest.json").is_file()][:1]
    if reading or bundles:
        hint = "`pirex verify " + " ".join(bundles or ["BUNDLE"]) + "` names what is damaged"
        return f"{msg}: a damaged or unexpected file; {hint}"
    return f"{msg}: unexpected; rerun with -v for the traceback and report it"


def _file_being_read(e: BaseException):
    """The innermost frame's Path naming an existing file (the reader's `path`, `f`...), if any."""
    from pathlib import Path

    tb, found = e.__traceback__, None
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            if isinstance(value, Path) and value.is_file():
                found = value
        tb = tb.tb_next
    return found
