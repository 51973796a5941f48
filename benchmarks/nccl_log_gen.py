"""A generator of NCCL_DEBUG=INFO logs shaped as a large job's real ones are (deterministic, seeded).

    python benchmarks/nccl_log_gen.py OUT.log [--mb 300] [--version 2.21.5] [--warn-every-rank]
                                      [--stamps] [--flat] [--seed 33]

What varies, as it does in a real log: each rank's own pid and tid (one per thread that prints), its
busId and CPU affinity mask, its own comm pointer in each of three communicators (the world; the
tensor-parallel groups of 8, one per node, made by ncclCommSplit; the data-parallel groups across
nodes), commIds, peers, trees and init timings. Each job step (an epoch: a restarted step, new pids
and pointers) opens the three communicators again until the log reaches its size. Lines of 64 ranks
are interleaved line by line, as srun forwards them. NVLS lines (world and TP), CollNet lines (world,
when the SHARP plugin is loaded: 2.23), one WARN on one rank at 40% (NET/IB async event) and one
completion error 12 on one rank at 85%, followed by its error trace. --warn-every-rank: every rank
of the failing step prints its own completion error (its own peer). --stamps: a log shipper's
timestamp before each line. --flat: every rank prints the text of rank 0 (the yardstick of a log
that repeats itself exactly: the cost per byte without the cost of distinct lines).

The line shapes are NCCL's own format strings (debug.cc ncclDebugLog prefixes `%s:%d:%d [%d] NCCL INFO `
and `\\n%s:%d:%d [%d] %s:%d NCCL WARN `; default subsystems INIT and ENV, v2.21.5-1 debug.cc:19):
init.cc (version, Init START/COMPLETE, `comm %p rank %d nRanks %d nNodes`, Trees, P2P Chunksize,
Connected all rings/trees, channel counts, Init timings from v2.23), bootstrap.cc, net.cc (plugin),
transport/net_ib.cc (Using, async event, completion), transport/p2p.cc and transport/net.cc (Channel
lines), transport/nvls.cc, transport/coll_net.cc, graph/topo.cc (affinity), graph/tuning.cc
(threadThresholds), at v2.18.6-1, v2.21.5-1 and v2.23.4-1.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

NODES, GPUS = 512, 8
RANKS = NODES * GPUS
GROUP = 64  # srun interleaves the output of this many ranks
VERSIONS = ("2.18.6", "2.21.5", "2.23.4")


class Job:
    """One job step: every rank's pid, tids, pointers for the three communicators."""

    def __init__(self, rng: random.Random, version: str, flat: bool) -> None:
        self.rng, self.version, self.flat = rng, tuple(int(x) for x in version.split(".")), flat
        self.text = version
        self.pids = [rng.randrange(2000, 4_000_000) for _ in range(RANKS)]
        self.tids = [[p + rng.randrange(1, 900) for _ in range(4)] for p in self.pids]
        self.base = [0x55_0000_0000 + rng.randrange(1 << 32) * 16 for _ in range(RANKS)]
        self.comm_ids = {kind: rng.getrandbits(63) for kind in ("world", "tp", "dp")}

    def ptr(self, rank: int, comm: int) -> str:
        return f"0x{self.base[0 if self.flat else rank] + comm * 0x2d4a80:x}"


def _bus(dev: int) -> str:
    return f"{(0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb)[dev]:x}000"


def _mask(dev: int) -> str:
    return ("ffffffff,ffffffff,00000000,00000000", "00000000,00000000,ffffffff,ffffffff")[dev // 4]


def _net_line(node: int) -> str:
    devs = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(8))
    return f"NET/IB : Using {devs} [RO]; OOB ib0:10.{node // 250}.{node % 250}.{11 + node % 7}<0>"


def rank_lines(job: Job, kind: str, rank: int, first: bool) -> list[str]:
    """The INFO lines one rank prints while one communicator initializes (and its process lines
    before the first one)."""
    rng, v = job.rng, job.version
    src = 0 if job.flat else rank
    node, dev = divmod(src, GPUS)
    host = f"gpu-node-{node:04d}"
    tid = job.tids[src][{"world": 0, "tp": 1, "dp": 2}[kind]]
    p = f"{host}:{job.pids[src]}:{tid} [{dev}] NCCL INFO "
    out = []
    if first:
        if src == 0:
            out.append(f"{p}NCCL version {job.text}+cuda12.4")
        out += [f"{p}cudaDriverVersion 12040", f"{p}NCCL_SOCKET_IFNAME set by environment to ib0",
                f"{p}Bootstrap : Using ib0:10.{node // 250}.{node % 250}.{11 + node % 7}<0>"]
        if v >= (2, 23):
            out.append(f"{p}NET/Plugin: Loaded net plugin SHARP (v8)")
        elif v >= (2, 19):
            out.append(f"{p}NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")
        else:
            out.append(f"{p}NET/Plugin : No plugin found, using internal implementation")
        out += [f"{p}{_net_line(node)}", f"{p}Using non-device net plugin version 0", f"{p}Using network IB"]
    nranks, crank = {"world": (RANKS, src), "tp": (GPUS, dev), "dp": (NODES, node)}[kind]
    comm = {"world": 0, "tp": 1, "dp": 2}[kind]
    ptr, bus = job.ptr(src, comm), _bus(dev)
    func = "ncclCommInitRank" if kind == "world" else "ncclCommSplit"
    head = f"comm {ptr} rank {crank} nranks {nranks} cudaDev {dev} nvmlDev {dev} busId {bus}"
    if v >= (2, 23):
        head = f"{func} {head}"
    elif v >= (2, 19):
        head = f"ncclCommInitRank {head}" if kind == "world" else f"ncclCommSplit {head}"
    if kind == "world" or v < (2, 19):
        tail = f"commId 0x{job.comm_ids[kind] ^ (0 if kind == 'world' else node if kind == 'tp' else dev):x}"
    else:
        tail = f"parent {job.ptr(src, 0)} color {node if kind == 'tp' else dev} key {crank}"
    out.append(f"{p}{head} {tail}{'-' if v >= (2, 23) and kind != 'world' else ' -'} Init START")
    out.append(f"{p}Setting affinity for GPU {dev} to {_mask(dev)}")
    if kind != "dp":
        out.append(f"{p}NVLS multicast support is available on dev {dev}")
    nnodes, local = {"world": (NODES, GPUS), "tp": (1, GPUS), "dp": (NODES, 1)}[kind]
    if v >= (2, 19):
        out.append(f"{p}comm {ptr} rank {crank} nRanks {nranks} nNodes {nnodes} localRanks {local} "
                   f"localRank {dev if kind != 'dp' else 0} MNNVL 0")
    if kind != "dp":
        out.append(f"{p}NVLS comm {ptr} headRank {dev} nHeads {GPUS} buffSize 1048576 memSize 2097152 "
                   f"nvlsPerRankSize 201326592 nvlsTotalSize 1610612736")
    channels = {"world": 16, "tp": 24, "dp": 8}[kind]
    up, down = (crank - 1) % nranks, (crank + 1) % nranks
    out.append(p + "Trees" + "".join(f" [{c}] {down}/-1/-1->{crank}->{up if c % 2 else -1}" for c in range(channels)))
    out.append(f"{p}P2P Chunksize set to 131072")
    nxt, prv = (crank + 1) % nranks, (crank - 1) % nranks
    cross = kind == "dp" or (kind == "world" and dev in (0, GPUS - 1))
    def bracket(r: int) -> str:  # the peer's nvmlDev (its busId before v2.19)
        peer = dev if kind == "dp" else r % GPUS
        return f"{peer}" if v >= (2, 19) else _bus(peer)

    for c in range(channels):
        if not cross:
            out.append(f"{p}Channel {c:02d}/0 : {crank}[{bracket(crank)}] -> {nxt}[{bracket(nxt)}] via P2P/CUMEM/read")
        else:
            out.append(f"{p}Channel {c:02d}/0 : {prv}[{bracket(prv)}] -> {crank}[{bracket(crank)}] [receive] "
                       f"via NET/IB/{dev}/GDRDMA")
            out.append(f"{p}Channel {c:02d}/0 : {crank}[{bracket(crank)}] -> {nxt}[{bracket(nxt)}] [send] "
                       f"via NET/IB/{dev}/GDRDMA")
    if kind == "world" and v >= (2, 23):
        for c in range(2):
            out.append(f"{p}CollNet {c:02d}/0 : {crank} [receive] via COLLNET/SHARP/{dev}/GDRDMA")
            out.append(f"{p}CollNet {c:02d}/1 : {crank} [send] via COLLNET/SHARP/{dev}/GDRDMA")
        out.append(f"{p}rank {crank} Connected CollNet")
    out += [f"{p}Connected all rings", f"{p}Connected all trees"]
    if kind != "dp":
        out.append(f"{p}Connected NVLS tree")
    out += [f"{p}threadThresholds 8/8/64 | 32768/8/64 | 512 | 512",
            f"{p}{channels} coll channels, {channels} collnet channels, 16 nvls channels, 32 p2p channels, "
            f"32 p2p channels per peer"]
    if v >= (2, 23):
        t = [rng.random() for _ in range(5)] if not job.flat else [0.5] * 5
        out.append(f"{p}Init timings - {func}: rank {crank} nranks {nranks} total {2 + t[0]:.2f} (kernels "
                   f"{t[1] / 4:.2f}, alloc 0.01, bootstrap {t[2]:.2f}, allgathers {t[3] / 9:.2f}, topo {t[4] / 3:.2f}, "
                   f"graphs 0.01, connections {t[0] / 2:.2f}, rest 0.02)")
    done = f"{head} {tail}"
    if v >= (2, 23) and kind != "world":
        done = f"{head} parent {job.ptr(src, 0)} color {node if kind == 'tp' else dev} key {crank}"
    out.append(f"{p}{done} - Init COMPLETE")
    return out


def warn_async(job: Job, rank: int) -> list[str]:
    node, dev = divmod(rank, GPUS)
    line = 101 if job.version >= (2, 19) else 95
    port = f"mlx5_{dev}:1 " if job.version >= (2, 19) else ""
    return [f"\ngpu-node-{node:04d}:{job.pids[rank]}:{job.tids[rank][3]} [{dev}] transport/net_ib.cc:{line} "
            f"NCCL WARN NET/IB : {port}Got async event : GID table change"]


def completion_error(job: Job, rank: int) -> list[str]:
    """net_ib.cc's completion error 12 (a retry-exceeded transport error) and the trace that follows it."""
    node, dev = divmod(rank, GPUS)
    pre = f"gpu-node-{node:04d}:{job.pids[rank]}:{job.tids[rank][3]} [{dev}]"
    peer = f"10.{(node + 1) % NODES // 250}.{(node + 1) % 250}.11<{40000 + rank * 7 % 20000}>"
    if job.version >= (2, 23):
        warn = f"transport/net_ib.cc:2121 NCCL WARN NET/IB: Got completion from peer {peer} with status=12 opcode=0 " \
               f"len=0 vendor err 129 (Recv) hca mlx5_{dev}"
    elif job.version >= (2, 19):
        warn = f"transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer {peer} with status=12 opcode=0 " \
               f"len=0 vendor err 129 (Recv)"
    else:
        warn = f"transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer {peer} with error 12, opcode 0, " \
               f"len 0, vendor err 129 (Recv)"
    return [f"\n{pre} {warn}", f"{pre} NCCL INFO transport/net.cc:1302 -> 6", f"{pre} NCCL INFO proxy.cc:698 -> 6",
            f"{pre} NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"]


def write_log(path: Path, mb: float, version: str = "2.21.5", seed: int = 33, warn_every: bool = False,
              stamps: bool = False, flat: bool = False) -> dict:
    """Write the log; returns what it holds: bytes, lines, steps, where its failure lines are."""
    rng = random.Random(seed)
    target = int(mb * 1e6)
    info = {"bytes": 0, "lines": 0, "steps": 0, "warn_line": None, "error_line": None}
    clock = [1_733_300_000.0]
    warned: set[int] = set()

    def emit(f, lines: list[str]) -> None:
        if stamps:
            out = []
            for line in "\n".join(lines).split("\n"):
                clock[0] += 0.000173
                sec = int(clock[0])
                out.append(f"2024-12-04T{sec // 3600 % 24:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}."
                           f"{int(clock[0] % 1 * 1e6):06d}Z stdout F {line}")
            lines = out
        text = "\n".join(lines) + "\n"
        f.write(text)
        info["lines"] += text.count("\n")

    with path.open("w") as f:
        while True:
            job = Job(rng, version, flat)
            info["steps"] += 1
            for kind in ("world", "tp", "dp"):
                for start in range(0, RANKS, GROUP):
                    group = [rank_lines(job, kind, r, kind == "world") for r in range(start, start + GROUP)]
                    done = f.tell() / target
                    warning = info["warn_line"] is None and done >= 0.40
                    if warning:
                        group[17] = warn_async(job, start + 17) + group[17]
                    failing = info["error_line"] is None and done >= 0.85
                    if failing:
                        group[23] = group[23] + completion_error(job, start + 23)
                    if warn_every and done >= 0.85 and start not in warned:
                        warned.add(start)  # each rank once
                        for i in range(GROUP):
                            if not (failing and i == 23):
                                group[i] = group[i] + completion_error(job, start + i)
                    lines = []
                    heads = [0] * GROUP
                    while True:  # srun: whichever rank's next line is ready goes out next
                        live = [i for i in range(GROUP) if heads[i] < len(group[i])]
                        if not live:
                            break
                        rng.shuffle(live)
                        for i in live:
                            lines.append(group[i][heads[i]])
                            heads[i] += 1
                    for flag, key, word in ((warning, "warn_line", "async event"), (failing, "error_line", "status=12")):
                        if flag:
                            at = next(i for i, line in enumerate(lines) if word in line or "error 12," in line)
                            info[key] = info["lines"] + sum(line.count("\n") + 1 for line in lines[:at]) + 2
                    emit(f, lines)
                    if f.tell() >= target and info["error_line"] is not None:
                        info["bytes"] = f.tell()
                        return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=300)
    ap.add_argument("--version", choices=VERSIONS, default="2.21.5")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--warn-every-rank", action="store_true")
    ap.add_argument("--stamps", action="store_true")
    ap.add_argument("--flat", action="store_true")
    args = ap.parse_args()
    info = write_log(Path(args.out), args.mb, args.version, args.seed, args.warn_every_rank, args.stamps, args.flat)
    print(info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
