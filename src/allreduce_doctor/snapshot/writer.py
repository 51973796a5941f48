"""Writing a bundle: a private staging folder, members written without following links,
then the folder moved into place or packed into a .tar.gz that appears atomically.

Never overwrites user data: the output may be absent, an empty folder, or an existing
allreduce-doctor bundle of the same kind (folder or archive); anything else is refused.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterable
from pathlib import Path

from allreduce_doctor.errors import BundleError
from allreduce_doctor.redact import redact_bytes
from allreduce_doctor.snapshot.bundle import OlderBundle, open_bundle

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_CONFLICTS = (errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.EEXIST)


def check_output(out: Path, archive: bool) -> None:
    """Refuse an output path that holds anything but an empty folder or a bundle of that kind."""
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return
    except OSError as err:
        raise BundleError(f"{out}: cannot inspect the output path ({err.strerror}); choose another path") from None
    if stat.S_ISDIR(st.st_mode) and not archive:
        with os.scandir(out) as entries:
            if next(entries, None) is None:
                return
    kind_ok = stat.S_ISREG(st.st_mode) if archive else stat.S_ISDIR(st.st_mode)
    if kind_ok:
        try:
            open_bundle(out)
            return
        except OlderBundle:  # refused for reading, but a bundle: collecting again replaces it
            return
        except BundleError:
            pass
    raise BundleError(
        f"{out}: exists and is not an allreduce-doctor bundle; refusing to overwrite it, choose another path"
    )


def make_staging(out: Path) -> Path:
    """A fresh private folder next to `out`, so the final move stays on one filesystem."""
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=parent))
    except OSError as err:
        raise BundleError(f"{out}: cannot create the bundle ({err.strerror}); choose another path") from None


class MemberWriter:
    """Writes members under a root folder, opening every folder and file without following links.

    `checksums` holds the CRC-32 of every member written, as written (redacted): index.json lists
    them so a reader tells a member deleted, cut or changed from one never recorded."""

    def __init__(self, root: Path, label: str) -> None:
        self.root = root
        self.label = label
        self.checksums: dict[str, int] = {}

    def write(self, name: str, data: bytes | Iterable[bytes]) -> bool:
        """Write one member, its bytes or its chunks in order (a command's record is streamed:
        never held whole a second time). False when the name clashes with another member (a file
        where a folder is needed, or the reverse); the caller then keeps the data in index.json."""
        parts = name.split("/")
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError as err:
            raise self._cannot(name, err) from None
        try:
            for part in parts[:-1]:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as err:
                    return self._failed(name, err)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as err:
                    # O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR
                    why = OSError(errno.ELOOP, os.strerror(errno.ELOOP)) if _is_link(part, fd) else err
                    return self._failed(name, why)
                os.close(fd)
                fd = child
            try:
                out = os.open(parts[-1], _FILE_FLAGS, 0o644, dir_fd=fd)
            except OSError as err:
                return self._failed(name, err)
            crc = 0
            with os.fdopen(out, "wb") as fh:
                for chunk in (data,) if isinstance(data, (bytes, bytearray)) else data:
                    written = redact_bytes(chunk)  # the last door before disk: no token shape passes
                    fh.write(written)
                    crc = zlib.crc32(written, crc)
            self.checksums[name] = crc
            return True
        except OSError as err:
            return self._failed(name, err)
        finally:
            os.close(fd)

    def _failed(self, name: str, err: OSError) -> bool:
        if err.errno == errno.ELOOP:
            raise BundleError(
                f"{self.label}: {name} meets a symbolic link inside the bundle; refusing to write through it"
            ) from None
        if err.errno in _CONFLICTS:
            return False
        raise self._cannot(name, err) from None

    def clash(self, name: str) -> BundleError:
        return BundleError(f"{self.label}: {name} clashes with another member of the bundle; record under another key")

    def _cannot(self, name: str, err: OSError) -> BundleError:
        return BundleError(f"{self.label}: cannot write {name} ({err.strerror}); check free space and permissions")


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def install_directory(staging: Path, out: Path) -> None:
    """Move the finished staging folder to `out`, replacing an empty folder or an old bundle."""
    if not os.path.lexists(out):
        os.rename(staging, out)
        return
    check_output(out, archive=False)
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    os.rename(out, old / "bundle")
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(old / "bundle", out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _ustar_fits(rel) -> bool:
    """True when `rel` fits a USTAR header: a name of <= 100 bytes after a prefix of <= 155."""
    name = str(rel).encode()
    if len(name) <= 100:
        return True
    cut = name[:156].rfind(b"/")
    return cut > 0 and len(name) - cut - 1 <= 100 and not any(b > 127 for b in name)


def pack_archive(staging: Path, out: Path) -> None:
    """Pack the staging folder's contents into `out` (.tar.gz): a temp file beside it, then os.replace."""
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            files = list(_regular_files(staging))
            # USTAR (name split into prefix + name) needs one header block per member where PAX
            # needs two for every path over 100 characters; reading back is then twice as fast.
            fits = all(_ustar_fits(rel) for rel in files)
            fmt = tarfile.USTAR_FORMAT if fits else tarfile.PAX_FORMAT
            with tarfile.open(fileobj=raw, mode="w:gz", format=fmt) as tar:
                for rel in files:
                    tar.add(staging / rel, arcname=rel, recursive=False, filter=_anonymous)
            raw.flush()
            os.fsync(raw.fileno())
        check_output(out, archive=True)
        os.replace(tmp, out)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def _regular_files(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                found.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return found


def _anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o644
    return info
