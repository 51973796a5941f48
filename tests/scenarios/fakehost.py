"""FakeHost: a Host answering from dictionaries, to build scenario bundles and test probes.

Files are given per sample (sample 1 entries override sample 0); directories are implied by
file paths, so globs over directories work as they do on sysfs.
"""

from __future__ import annotations

import fnmatch
import posixpath

from allreduce_doctor.hosts.base import FILE_MISSING, CommandResult, FileResult, HostIdentity, ProcessInfo
from tests.hostclock import SampleClock


class FakeHost(SampleClock):
    kind = "live"

    def __init__(self, files=None, files_later=None, links=None, tools=(), commands=None,
                 commands_later=None, processes=(), denied=(), identity=None, exports=None) -> None:
        self.samples = [dict(files or {}), {**(files or {}), **(files_later or {})}]
        self.links = dict(links or {})
        self.exports = dict(exports or {})  # library path -> the dynamic symbols it defines
        self.tools = set(tools)
        self.commands = [dict(commands or {}), {**(commands or {}), **(commands_later or {})}]
        self._processes = list(processes)
        self.denied = set(denied)
        self._identity = identity or HostIdentity("fake-node", "6.8.0-test", 1000, False)
        self._sample = 0
        self._time = 1000.0
        self._last_sample = len(self.samples) - 1
        self.calls: list[tuple] = []

    def _paths(self) -> set[str]:
        paths = set()
        for path in self.samples[self._sample]:
            parts = path.split("/")
            for i in range(2, len(parts) + 1):
                paths.add("/".join(parts[:i]))
        paths.update(self.links)
        return paths

    def identity(self) -> HostIdentity:
        return self._identity

    def read(self, path: str) -> FileResult:
        self.calls.append(("read", path))
        if path in self.denied:
            return FileResult(path, "denied", reason="permission denied (needs root)")
        files = self.samples[self._sample]
        if path not in files:
            return FileResult(path, FILE_MISSING, reason="no such file")
        value = files[path]
        if isinstance(value, FileResult):
            return value
        return FileResult(path, "ok", text=value)

    def glob(self, pattern: str) -> list[str]:
        depth = pattern.count("/")
        return sorted(p for p in self._paths() if p.count("/") == depth and fnmatch.fnmatchcase(p, pattern))

    def readlink(self, path: str) -> str | None:
        return self.links.get(path)

    def which(self, name: str) -> str | None:
        return f"/usr/bin/{name}" if name in self.tools else None

    def elf_exports(self, path: str, prefix: str) -> list[str] | None:
        found = self.exports.get(path)
        return None if found is None else sorted(s for s in found if s.startswith(prefix))

    def run(self, argv, timeout, key=""):
        self.calls.append(("run", tuple(argv)))
        found = self.commands[self._sample].get(tuple(argv))
        if found is None:
            return CommandResult(list(argv), None, error="not found")
        rc, out, *err = found if isinstance(found, tuple) else (0, found)  # (rc, stdout[, stderr])
        stderr = err[0] if err else ("" if rc == 0 else "failed")
        return CommandResult(list(argv), rc, stdout=out, stderr=stderr, duration=0.01)

    def processes(self) -> list[ProcessInfo]:
        return list(self._processes)



def basename(path: str) -> str:
    return posixpath.basename(path)
