"""EmptyHost: no node at all. Used when only pasted evidence is diagnosed (on a laptop, from a
ticket): every file and command is missing, so only the evidence decides and nothing is read."""

from __future__ import annotations

from allreduce_doctor.hosts.base import FILE_MISSING, CommandResult, FileResult, HostIdentity, ProcessInfo

REASON = "no node was read (diagnosing pasted evidence only)"
# What to paste for a node fact the evidence reader takes from a tool's output (evidence/node_facts.py, the
# segmenter's tools): a fact that stays unknown says which output would decide it.
PASTE_FOR = {
    "kernel.cmdline": "`cat /proc/cmdline`",
    "kernel.dmesg": "`sudo dmesg`",
    "pci.lspci": "`sudo lspci -vvv`",
    "gpu.topo": "`nvidia-smi topo -m`",
    "gpu.nvlink": "`nvidia-smi nvlink -s`",
    "gpu.fabric": "`nvidia-smi -q`",
    "rdma.ports": "`ibstat` (or `ibv_devinfo`)",
    "tools.ibstat": "`ibstat`",
    "tools.ibv_devinfo": "`ibv_devinfo -v`",
    "tools.show_gids": "`show_gids`",
    "tools.ibdev2netdev": "`ibdev2netdev`",
    "rdma.gid_values": "`show_gids`",
    "rdma.gid_types": "`show_gids`",
    "rdma.gid_ndevs": "`show_gids`",
    "net.qos_mlnx": "`mlnx_qos -i IFACE` of each RoCE interface",
    "nccl.processes": "the job's NCCL_* variables (`env | grep ^NCCL_` where a rank runs)",
}


def missing_reason(fact: str) -> str:
    """Why a node fact is unknown with no node read, and the paste that would give it."""
    hint = PASTE_FOR.get(fact)
    return f"{REASON}: paste {hint}" if hint else REASON


class EmptyHost:
    kind = "evidence"

    def identity(self) -> HostIdentity:
        return HostIdentity(hostname="", kernel="")

    def read(self, path: str) -> FileResult:
        return FileResult(path, FILE_MISSING, reason=REASON)

    def glob(self, pattern: str) -> list[str]:
        return []

    def readlink(self, path: str) -> str | None:
        return None

    def which(self, name: str) -> str | None:
        return None

    def elf_exports(self, path: str, prefix: str) -> list[str] | None:
        return None

    def run(self, argv: list[str], timeout: float, key: str = "") -> CommandResult:
        return CommandResult(list(argv), None, error=REASON)

    def processes(self) -> list[ProcessInfo]:
        return []

    @property
    def sample(self) -> int:
        return 0

    def sample_time(self) -> float:
        return 0.0

    def next_sample(self, interval: float) -> None:
        return None
