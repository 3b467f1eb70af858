"""Files gpuobs writes for the user (a Markdown report, generated dashboards and rules): all or none.

A full disk or a quota reached mid-write used to leave a truncated file where the user's earlier report or
rule file was (a half YAML file that Prometheus then refuses on reload). Each file is now written beside its
target under a temporary name, and the targets are replaced by renames only once every file is on disk; a
failed write removes the temporaries and leaves what was there untouched.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from gpuobs.errors import GpuobsError, InputError, OutputWriteError

__all__ = ["WRITE_ERRNOS", "check_output_file", "write_failure", "write_texts"]

# For want of room or a device error: the disk's state, not the path the user gave.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def write_failure(what: str, exc: OSError) -> GpuobsError:
    """The error to raise for a failed write of `what`: exit 74 for a full disk, a quota, a size limit or an
    I/O error; exit 2 (the user's input) for a folder that is read-only or not theirs."""
    reason = exc.strerror or str(exc)
    if exc.errno in WRITE_ERRNOS:
        return OutputWriteError(f"{what}: cannot write: {reason}; nothing there was changed")
    return InputError(f"{what}: cannot write: {reason}")


def check_output_file(path: Path, flag: str, inputs: Sequence[Path] = ()) -> None:
    """Before any work: `path` names a file the run may write, and not one the run reads (`diagnose x.log
    --markdown x.log` replaced the incident's only log with the report); InputError (exit 2) otherwise."""
    if path.name in ("", ".", "..") or str(path).endswith(os.sep):
        raise InputError(f"{flag} {str(path)!r}: not a file name")
    if path.is_dir():
        raise InputError(f"{flag} {path}: is a folder; give a file name in it")
    for given in inputs:
        try:
            same = path.exists() and given.is_file() and os.path.samefile(path, given)
        except OSError:  # an input that cannot be read is reported by the reader that opens it
            same = False
        if same:
            raise InputError(
                f"{flag} {path} is also an input of this run ({given}): the report would replace it; "
                "give another file"
            )


def _staged_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.gpuobs-partial")


def _is_special(path: Path) -> bool:
    """A device or a pipe (`--markdown /dev/stdout`): written in place, there is nothing to rename over."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _staging_error(exc: OSError, target: Path) -> OSError:
    """The folder named when it takes no new file (`--markdown /proc/version` said only "No such file or
    directory" of a file that exists): a report is staged beside its target, so its folder must allow it."""
    folder = target.parent
    if exc.errno in WRITE_ERRNOS or exc.filename != str(_staged_name(target)) or not folder.is_dir():
        return exc
    return OSError(exc.errno, f"no new file can be made in {folder} ({exc.strerror or exc})")


def write_texts(files: Sequence[tuple[Path, str]], what: str | None = None) -> None:
    """Write every (path, text) or none: stage each beside its target, then rename all into place.

    A link is followed (the file it points at is replaced, the link kept). `what` names the output in the
    error; by default the file that failed."""
    staged: list[tuple[Path, Path]] = []
    target = Path()
    try:
        for path, text in files:
            target = path.resolve() if path.is_symlink() else path
            if _is_special(target):
                target.write_text(text, encoding="utf-8")
                continue
            temporary = _staged_name(target)
            staged.append((temporary, target))
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(text)
    except OSError as exc:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise write_failure(what or str(target), _staging_error(exc, target)) from None
    try:
        for temporary, target in staged:  # renames take no room: once staged, every file lands
            os.replace(temporary, target)
    except OSError as exc:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise write_failure(what or str(target), exc) from None
