"""Writing a report or document where the user asked: stdout, a device, or a file.

A file is written to a fresh temporary name made by mkstemp in the target's directory
(O_CREAT|O_EXCL: never through a planted link, never a name another user can guess and
pre-create), then renamed over the target, so it appears whole or not at all and a symbolic
link at the target is replaced, never followed.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.sanitize import terminal

NEW_FILE_MODE = 0o644


def write_output(text: str, output: str | None) -> None:
    """Write `text` to stdout (no output, or "-") or to the file `output`, control characters
    escaped (sanitize.terminal): a file is read on a terminal too."""
    text = terminal(text)
    if not output or output == "-":
        sys.stdout.write(text)
        return
    try:
        write_file(Path(output), text)
    except OSError as err:
        raise DoctorError(f"cannot write {output}: {err.strerror or err}") from None


def write_file(target: Path, text: str) -> None:
    """Write `text` to `target` atomically; raises OSError. A character device or FIFO the user
    named (/dev/null, /dev/stdout, a link to one) is written in place: renaming over it would
    replace it. Any other link at `target` is replaced by the file, its target left alone."""
    st = _stat(target, follow=True)
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    own = _stat(target, follow=False)
    if own is not None and stat.S_ISDIR(own.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    if own is not None and not (stat.S_ISREG(own.st_mode) or stat.S_ISLNK(own.st_mode)):
        raise OSError(0, "exists and is not a regular file")
    mode = stat.S_IMODE(own.st_mode) if own is not None and stat.S_ISREG(own.st_mode) else NEW_FILE_MODE
    import tempfile  # here, not at the top: a report to stdout needs none of it (nor its shutil, random)

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(text)
        os.replace(tmp, target)  # replaces a link at `target`, never writes through it
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def _stat(path: Path, follow: bool) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=follow)
    except (FileNotFoundError, NotADirectoryError):
        return None
