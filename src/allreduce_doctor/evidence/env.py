"""Environment and launcher lines: which NCCL variables the job ran with, and how it was launched.

Accepted spellings: `export NCCL_X=Y`, `NCCL_X=Y cmd ...` (assignments that start a line), env
dumps (`NCCL_X=Y` alone), `-x NCCL_X=Y` / `-x NCCL_X` (mpirun), `--env`, `-e`, `-genv NCCL_X Y`,
`--export=...,NCCL_X=Y` (Slurm), `ENV NCCL_X=Y` (Dockerfile), `- name: NCCL_X` + `value: Y`
(Kubernetes), `os.environ["NCCL_X"] = "Y"`, and NCCL's own `NCCL_X set by environment to Y`.
An assignment in the middle of prose ("it works with NCCL_P2P_DISABLE=1") is not taken: only
what a command or a config sets counts.
"""

from __future__ import annotations

import re

from allreduce_doctor.errors import ParseError
from allreduce_doctor.evidence.lines import Where
from allreduce_doctor.parsers import parse
from allreduce_doctor.parsers.nccl_env import (
    CHAIN_RE,
    CONTAINER_RE,
    EXPORT_LIST_RE,
    FLAG_RE,
    GENV_RE,
    GPUS_RE,
    HOSTS_RE,
    K8S_NAME_RE,
    K8S_VALUE_RE,
    LAUNCH_RE,
    LEAD_RE,
    MPI_NODES_RE,
    MPI_PERNODE_RE,
    NODES_RE,
    NP_RE,
    PERNODE_RE,
    PROMPT_RE,
    PYENV_RE,
    REPORTED_RE,
    SPACED_RE,
    TEST_RE,
    YAML_MAP_RE,
)

# The counts a launcher line gives, flag by flag (Open MPI's -N is per node: parsers/nccl_env.py).
_FLAGS = (("np", NP_RE), ("nodes", NODES_RE), ("per_node", PERNODE_RE), ("gpus_per_proc", GPUS_RE))
_MPI_FLAGS = (("np", NP_RE), ("nodes", MPI_NODES_RE), ("per_node", PERNODE_RE), ("per_node", MPI_PERNODE_RE),
              ("gpus_per_proc", GPUS_RE))


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


class EnvLog:
    """NCCL variables and launch parameters found anywhere in the evidence."""

    def __init__(self) -> None:
        self.vars: dict[str, dict] = {}  # name -> {value, source, from_nccl}
        self.forwarded: dict[str, str] = {}  # `-x NCCL_X` without a value -> where
        self.launch: dict = {}
        self.where = Where()
        self._k8s_name: str | None = None
        self._run_lines: list[str] = []  # a `docker run` line and its continuation lines
        self._run_open = False  # the last of them ends with a backslash
        self.host: str | None = None  # the host a prompt named before these lines (host_key), if any
        # A variable two named hosts set differently: {name: {host: value}}. Both are kept; the
        # whole paste's value of it is unknown (each host's own reading has its own, hosts.py).
        self.conflicts: dict[str, dict[str, str | None]] = {}

    def set(self, name: str, value: str | None, where: str, from_nccl: bool = False) -> None:
        value = _clean(value)
        if value is None:
            self.forwarded.setdefault(name, where)
            return
        if value.startswith("$"):
            value = None  # an unexpanded shell reference says nothing about the value
        old = self.vars.get(name)
        if old and old["from_nccl"] and not from_nccl:
            return  # what NCCL itself reported wins over what a command line claims
        host = None if from_nccl else self.host
        if old and old.get("host") and host and old["host"] != host and old["value"] != value:
            self.conflicts.setdefault(name, {old["host"]: old["value"]})[host] = value
        elif old and name in self.conflicts and host:
            self.conflicts[name][host] = value
        self.vars[name] = {"value": value, "source": where, "from_nccl": from_nccl, "host": host}
        self.where.add(where)

    def feed(self, text: str, where: str) -> str | None:
        """Take one line; returns 'env', 'command' or None when it sets nothing."""
        line = PROMPT_RE.sub("", text, count=1).rstrip()
        continued = self._run_more(line, where)
        found = False
        if self._k8s_name:
            m = K8S_VALUE_RE.match(line)
            if m:
                self.set(self._k8s_name, m.group(1), where)
                found = True
            self._k8s_name = None
        m = REPORTED_RE.search(line)
        if m:
            self.set(m.group(1), m.group(2), where, from_nccl=True)
            return "env"
        m = K8S_NAME_RE.match(line)
        if m:
            self._k8s_name = m.group(1)
            self.where.add(where)
            return "env"
        m = YAML_MAP_RE.match(line)
        if m:
            self.set(m.group(1), m.group(2), where)
            return "env"
        rest = self._leading(line, where)
        found |= rest is not line
        for m in FLAG_RE.finditer(line):
            self.set(m.group(1), m.group(2), where)
            found = True
        for m in GENV_RE.finditer(line):
            self.set(m.group(1), m.group(2), where)
            found = True
        for chunk in EXPORT_LIST_RE.findall(line):  # Slurm: --export=ALL,NCCL_A=1,NCCL_B=2
            for item in chunk[9:].split(","):
                name, sep, value = item.partition("=")
                if sep and re.fullmatch(r"NCCL_[A-Z0-9_]+", name):
                    self.set(name, value, where)
                    found = True
        for m in PYENV_RE.finditer(line):
            self.set(m.group(1), m.group(2), where)
            found = True
        launched = self._launch(rest.lstrip(), line, where) or continued
        if launched:
            return "command"
        return "env" if found else None

    def _leading(self, line: str, where: str) -> str:
        """Take the assignments a line starts with; returns the rest (the line itself if none)."""
        m = LEAD_RE.match(line) or SPACED_RE.match(line)
        if not m:
            return line
        self.set(m.group(1), m.group(2), where)
        rest = line[m.end():].lstrip()
        while True:  # NCCL_A=1 NCCL_B=2 cmd ...
            m = CHAIN_RE.match(rest)
            if not m:
                return rest
            self.set(m.group(1), m.group(2), where)
            rest = rest[m.end():]

    def _launch(self, command: str, line: str, where: str) -> bool:
        if CONTAINER_RE.match(command):  # what the container is given (parsers/containers.py)
            self._run_lines = [command]
            self._run_open = command.endswith("\\")
            self._container(where)
            return True
        launcher = LAUNCH_RE.match(command)
        if not launcher or len(line) > 4000:
            return False
        info = self.launch
        for key, rx in _MPI_FLAGS if launcher.group(1) in ("mpirun", "mpiexec") else _FLAGS:
            hit = rx.search(line)
            if hit:
                info.setdefault(key, int(hit.group(1)))
        hit = HOSTS_RE.search(line)
        if hit and "hosts" not in info:
            hosts = [h.split(":")[0] for h in hit.group(1).split(",") if h]
            slots = [int(h.split(":")[1]) for h in hit.group(1).split(",") if h.count(":") == 1
                     and h.split(":")[1].isdigit()]
            info["hosts"] = hosts[:256]
            if slots and len(slots) == len(hosts):
                info.setdefault("per_node", max(slots))
        test = TEST_RE.search(line)
        if test and "test" not in info:
            info["test"] = test.group(1)
        info.setdefault("source", where)
        self.where.add(where)
        return True

    def _container(self, where: str) -> None:
        try:
            spec = parse("container_run", "\n".join(self._run_lines))
        except ParseError:
            return
        first = (self.launch.get("container") or {}).get("source") if len(self._run_lines) > 1 else None
        self.launch["container"] = dict(spec, source=first or where)
        self.where.add(where)

    def _run_more(self, line: str, where: str) -> bool:
        """A `docker run ... \\` line's continuation (`  --shm-size=1g \\`): read with the line it continues."""
        if not self._run_open or len(self._run_lines) >= 64:
            self._run_open = False
            return False
        self._run_lines.append(line.strip())
        self._run_open = line.endswith("\\")
        self._container(where)
        return True

    def values(self) -> dict[str, str]:
        return {k: v["value"] for k, v in sorted(self.vars.items()) if v["value"] is not None and k not in self.conflicts}
