"""SnapshotHost: answers every Host call from a captured bundle (directory or .tar.gz).

What the bundle recorded comes back exactly (failures too); what it never recorded is
reported as not captured: a read is `missing`, a command never ran, a glob is unknown.
A damaged or hostile bundle raises BundleError (one line) on open or on the first answer
that touches the damaged part.
"""

from __future__ import annotations

import os

from allreduce_doctor.hosts.base import (
    FILE_ERROR,
    FILE_MISSING,
    FILE_OK,
    CommandResult,
    FileResult,
    GlobNotRecorded,
    HostIdentity,
    ProcessInfo,
)
from allreduce_doctor.snapshot.bundle import open_bundle
from allreduce_doctor.snapshot.names import DAMAGED, NOT_CAPTURED, command_member, file_member
from allreduce_doctor.snapshot.schema import check_command, check_process

NOT_RECORDED = "not captured in the bundle (past its last sample)"
GLOB_NOT_RECORDED = "not recorded in this bundle (index.json lists no such glob)"


class SnapshotHost:
    kind = "snapshot"

    def __init__(self, path: str | os.PathLike, max_bytes: int | None = None, over_hint: str = "") -> None:
        self._bundle = open_bundle(path, max_bytes, over_hint)
        self._samples = self._bundle.manifest["samples"]
        self._position = 0
        self._past_last = 0.0  # seconds asked for past the last recorded sample (0: still in one)
        self._globbed_by_sample: dict[int, frozenset[str]] = {}
        self._reads_of: tuple[int | None, dict] = (None, {})

    def close(self) -> None:
        """Let go of the bundle's contents; the host answers nothing after."""
        self._bundle.close()

    @property
    def manifest(self) -> dict:
        return self._bundle.manifest

    @property
    def path(self) -> str:
        return self._bundle.label

    def identity(self) -> HostIdentity:
        return HostIdentity(**self._bundle.manifest["host"])

    # --- files ------------------------------------------------------------------------------
    def read(self, path: str) -> FileResult:
        if self._past_last:
            return FileResult(path, FILE_MISSING, reason=NOT_RECORDED)
        sample = self.sample
        entry = self._indexed_reads(sample).get(path)
        member = file_member(path, sample)
        if entry is None:
            text = self._bundle.text(member) if member else None
            if text is None:
                if path in self._globbed(sample):
                    raise self._bundle.fail(
                        f"index.json lists {path} under a glob of sample {sample} but "
                        f"{member or 'its text'} is not in the bundle; {DAMAGED}"
                    )
                # the recorder writes every read (a member, or its failure in index.json): one with
                # neither was never read or was taken out, and is unknown, never "no such file"
                return FileResult(path, FILE_ERROR, reason=NOT_CAPTURED)
            return FileResult(path, FILE_OK, text=text)
        answered = entry.get("path", path)
        if entry["status"] != FILE_OK:
            return FileResult(answered, entry["status"], reason=entry.get("reason", ""))
        text = entry.get("text")
        if text is None:
            text = self._bundle.text(member) if member else None
        if text is None:
            raise self._bundle.fail(
                f"index.json records {path} as read but {member or 'its text'} is not in the bundle; {DAMAGED}"
            )
        return FileResult(answered, FILE_OK, text=text, reason=entry.get("reason", ""))

    def _indexed_reads(self, sample: int) -> dict:
        """The reads of a sample that index.json records (failures, a path answered as another, a text
        no member holds), looked up once per sample rather than once per read: a bundle answers a
        thousand reads."""
        if self._reads_of[0] != sample:
            self._reads_of = (sample, self._bundle.index["reads"].get(str(sample), {}))
        return self._reads_of[1]

    def _globbed(self, sample: int) -> frozenset[str]:
        """The paths this sample's own globs listed. A probe that globs reads every path it
        listed in the same instance (probes/execute.py _run_glob), so one of them neither stored
        nor recorded as failed was lost from the bundle: older bundles, which list no members,
        are caught here."""
        found = self._globbed_by_sample.get(sample)
        if found is None:
            listed = self._bundle.index["globs"].get(str(sample), {}).values()
            found = self._globbed_by_sample[sample] = frozenset(p for paths in listed for p in paths)
        return found

    def glob(self, pattern: str) -> list[str]:
        """The paths recorded for `pattern` in this sample; a later sample that never globbed it
        (or a step past the last sample) has the first sample's paths, whose reads are then not
        captured: unknown, where an empty list would say the hardware is absent. A pattern no
        sample recorded (dropped from an older index.json, or a probe newer than the bundle)
        raises GlobNotRecorded: what it lists is unknown, not "nothing matches"."""
        globs = self._bundle.index["globs"]
        found = None if self._past_last else globs.get(str(self.sample), {}).get(pattern)
        if found is None:
            found = globs.get(str(self._samples[0]["index"]), {}).get(pattern)
        if found is None:
            raise GlobNotRecorded(f"{pattern}: {GLOB_NOT_RECORDED}")
        return list(found)

    def readlink(self, path: str) -> str | None:
        return self._bundle.index["links"].get(path)

    def which(self, name: str) -> str | None:
        return self._bundle.index["which"].get(name)

    def elf_exports(self, path: str, prefix: str) -> list[str] | None:
        """As recorded; a bundle from before the symbol read, or a file it never read: None."""
        found = self._bundle.index["exports"].get(prefix, {}).get(path)
        return list(found) if found is not None else None

    def never_looked_up(self, name: str) -> bool:
        """The recorder writes every lookup (None when the tool was absent): a name the index lacks
        was never looked up, because the bundle predates the probe. Absent either way, but not
        "not installed"."""
        return name not in self._bundle.index["which"]

    # --- commands and processes ---------------------------------------------------------------
    def run(self, argv: list[str], timeout: float, key: str = "") -> CommandResult:
        if self._past_last:
            return CommandResult(list(argv), None, error=NOT_CAPTURED)
        member = command_member(key, argv, self.sample)
        data = self._bundle.load_json(member)
        if data is None:
            return CommandResult(list(argv), None, error=NOT_CAPTURED)
        return check_command(self._bundle.label, member, data)

    def processes(self) -> list[ProcessInfo]:
        recorded = self._bundle.index["processes"] or []
        return [check_process(self._bundle.label, i, p) for i, p in enumerate(recorded)]

    # --- samples ------------------------------------------------------------------------------
    @property
    def sample(self) -> int:
        return self._samples[self._position]["index"]

    def sample_time(self) -> float:
        return self._samples[self._position]["time"] + self._past_last

    def next_sample(self, interval: float) -> None:
        """Step to the next recorded sample, without sleeping. Past the last one nothing was
        recorded: reads and commands are not captured (the same sample read twice would give
        zero rates, "no growth", where the truth is unknown)."""
        if self._position + 1 < len(self._samples):
            self._position += 1
        else:
            self._past_last += max(float(interval), 1e-3)
