"""Streaming benchmark for evidence import: a synthetic NCCL_DEBUG=INFO log of a 4,096-rank job.

    python benchmarks/evidence_stream.py [--mb 300] [--repeat 3] [--keep DIR]

Writes the log (512 nodes x 8 GPUs, several communicators, ranks interleaved, a few warnings and
an nccl-tests table at the end) into a temporary directory, then times, in the same run and on
the same file, `grep -c NCCL FILE` and `load_evidence([FILE])` (each in a child process, best
of --repeat), and reads the child's peak RSS. Targets (issue 5): at most 5x grep's time, peak
RSS under 150 MB.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODES, GPUS = 512, 8
RANKS = NODES * GPUS
CHILD = (
    "import sys, resource, time\n"
    "from allreduce_doctor.evidence import load_evidence\n"
    "t = time.perf_counter(); r = load_evidence([sys.argv[1]]); t = time.perf_counter() - t\n"
    "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "n = {o.fact: o.value for o in r.observations}['log.nccl']\n"
    "print(t, rss, n['lines'], n['network'], len(n['transports']))\n"
)


def _rank_lines(comm: int, rank: int, rng: random.Random, failing: bool = False) -> list[str]:
    node, dev = divmod(rank, GPUS)
    host = f"gpu-node-{node:04d}"
    pid, tid = 41000 + dev, 42000 + dev + comm * 16
    p = f"{host}:{pid}:{tid} [{dev}] NCCL INFO "
    nxt, prv = (rank + 1) % RANKS, (rank - 1) % RANKS
    lines = [
        f"{p}Bootstrap : Using bond0:10.{node // 256}.{node % 256}.10<0>",
        f"{p}NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
        f"{p}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB "
        f"[5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB bond0:10.{node // 256}.{node % 256}.10<0>",
        f"{p}Using network IB",
        f"{p}ncclCommInitRank comm 0x{comm:x}55d0c0 rank {rank} nranks {RANKS} cudaDev {dev} nvmlDev {dev} "
        f"busId {dev:x}a000 commId 0x{comm:x}9a3f - Init START",
        f"{p}Setting affinity for GPU {dev} to ffffffff,00000000,ffffffff",
        f"{p}NVLS multicast support is available on dev {dev}",
        f"{p}comm 0x{comm:x}55d0c0 rank {rank} nRanks {RANKS} nNodes {NODES} localRanks {GPUS} localRank {dev} MNNVL 0",
        f"{p}Trees [0] {nxt}/-1/-1->{rank}->{prv} [1] {nxt}/-1/-1->{rank}->{prv} [2] -1/-1/-1->{rank}->{prv}",
        f"{p}P2P Chunksize set to 524288",
    ]
    for ch in range(32):
        peer = (rank + GPUS) % RANKS
        lines.append(f"{p}Channel {ch:02d}/0 : {rank}[{dev}] -> {nxt}[{nxt % GPUS}] via P2P/CUMEM/read")
        if ch % 2 == 0:
            lines.append(f"{p}Channel {ch:02d}/0 : {rank}[{dev}] -> {peer}[{dev}] [send] via NET/IB/{dev}/GDRDMA")
            lines.append(f"{p}Channel {ch:02d}/0 : {prv}[{prv % GPUS}] -> {rank}[{dev}] [receive] via NET/IB/{dev}/GDRDMA")
    lines += [
        f"{p}Connected all rings",
        f"{p}Connected all trees",
        f"{p}threadThresholds 8/8/64 | 32768/8/64 | 512 | 512",
        f"{p}32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer",
        f"{p}comm 0x{comm:x}55d0c0 rank {rank} nranks {RANKS} cudaDev {dev} nvmlDev {dev} busId {dev:x}a000 "
        f"commId 0x{comm:x}9a3f - Init COMPLETE",
    ]
    if rng.random() < 0.001:
        lines.append(f"{host}:{pid}:{tid} [{dev}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got async event : "
                     "port active")
    if failing:  # every rank's own completion error, naming its peer: as many distinct WARN lines as ranks
        lines.append(f"{host}:{pid}:{tid} [{dev}] transport/net_ib.cc:1339 NCCL WARN NET/IB : mlx5_{dev}:1 Got "
                     f"completion from peer 10.1.{(node + 1) % NODES // 256}.{(node + 1) % 256}<{40000 + comm * 37 + rank}> "
                     "with error 12, opcode 0, len 0, vendor err 129 (Recv)")
    return lines


def write_log(path: Path, target_mb: int, seed: int = 5, failing: bool = False) -> int:
    """Write the log; returns its size in bytes. Ranks of a node group are interleaved. `failing`:
    every rank also prints its own transport error (a job that failed on the network)."""
    rng = random.Random(seed)
    with path.open("w") as f:
        f.write("NCCL version 2.21.5+cuda12.4\n")
        for r in range(RANKS):
            f.write(f"#  Rank {r:4d} Group  0 Pid {41000 + r % GPUS:6d} on gpu-node-{r // GPUS:04d} device  "
                    f"{r % GPUS} [0x{r % GPUS:x}a] NVIDIA H100 80GB HBM3\n")
        comm = 0
        while f.tell() < target_mb << 20:
            comm += 1
            for start in range(0, RANKS, 64):
                group = [_rank_lines(comm, r, rng, failing) for r in range(start, start + 64)]
                while group:  # interleave the ranks of a group line by line, as a real log does
                    rng.shuffle(group)
                    for lines in group:
                        f.write(lines.pop(0) + "\n")
                    group = [g for g in group if g]
                if f.tell() >= target_mb << 20:
                    break
        f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                "algbw   busbw #wrong\n")
        for shift in range(20, 34):
            size = 1 << shift
            alg = min(200.0, size / 2.0e7)
            bus = alg * 2 * (RANKS - 1) / RANKS
            t = size / alg / 1e3
            f.write(f"{size:>12d} {size // 4:>13d}     float     sum      -1 {t:8.1f} {alg:7.2f} {bus:7.2f}      0 "
                    f"{t:8.1f} {alg:7.2f} {bus:7.2f}      0\n")
        f.write("# Avg bus bandwidth    : 190.1\n")
        return f.tell()


def best(fn, repeat: int):
    results = [fn() for _ in range(repeat)]
    return min(results, key=lambda r: r[0])


def time_grep(path: Path):
    def run():
        t = time.perf_counter()
        out = subprocess.run(["grep", "-c", "NCCL", str(path)], capture_output=True, text=True)
        return time.perf_counter() - t, out.stdout.strip()
    return best(run, 3)


def time_ours(path: Path, repeat: int):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    def run():
        out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env,
                             check=True)
        seconds, rss_kb, lines, network, transports = out.stdout.split()
        return float(seconds), int(rss_kb), int(lines), network, int(transports)
    return best(run, repeat)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=300, help="size of the synthetic log (MB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="write the log into this directory and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        path = folder / "nccl-4096-ranks.log"
        size = write_log(path, args.mb)
        mb = size / 1e6
        print(f"synthetic NCCL_DEBUG=INFO log: {RANKS} ranks on {NODES} nodes, {mb:.0f} MB ({path.name})")
        grep_s, grep_count = time_grep(path)
        ours_s, rss_kb, lines, network, transports = time_ours(path, args.repeat)
        print(f"grep -c NCCL:       {grep_s:7.3f} s  ({mb / grep_s:7.0f} MB/s, {grep_count} lines)")
        print(f"load_evidence:      {ours_s:7.3f} s  ({mb / ours_s:7.0f} MB/s, {lines} NCCL lines, network {network}, "
              f"{transports} transports)")
        ratio = ours_s / grep_s
        print(f"ratio to grep:      {ratio:7.2f}x   (target <= 5x)  {'ok' if ratio <= 5 else 'OVER'}")
        print(f"peak RSS:           {rss_kb / 1024:7.1f} MB  (target < 150 MB)  {'ok' if rss_kb < 150 * 1024 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
