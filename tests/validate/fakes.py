"""Fake nccl-tests, perftest and srun executables that print the real tools' output formats.

The layout of all_reduce_perf / alltoall_perf is nccl-tests' own (src/common.cu: the header, the
`#  Rank` lines, the two-placement table, `# Avg bus bandwidth`), as in the reference outputs in
tests/fixtures/outputs/nccl-tests/*.txt; ib_write_bw prints perftest's --report_gbits block.
Each reads bin/fake.json (what the scenario wants: peak busbw, a file whose creation ends the run, exit code, a hang,
sizes printed before that wait),
since the launcher's environment is filtered. The fake srun takes srun's options, sets the
SLURM_* variables a step sees, and execs the benchmark once (it stands for every rank).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NCCL_TESTS = r'''
import json, os, sys, time
conf = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake.json")))
name = os.path.basename(sys.argv[0])
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
low, high, factor = int(args["-b"]), int(args["-e"]), int(args["-f"])
nodes = os.environ.get("SLURM_JOB_NODELIST_EXPANDED", "gpu01").split(",")
ranks = int(os.environ.get("SLURM_NTASKS_PER_NODE", "8"))
if conf.get("fail"):
    sys.stderr.write(conf["fail"] + "\n")
    sys.exit(conf.get("rc", 1))
print(f"# nThread 1 nGpus 1 minBytes {low} maxBytes {high} step: {factor}(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0")
print("#")
print("# Using devices")
rank = 0
for node in nodes:
    for dev in range(ranks):
        print(f"#  Rank {rank:2d} Group  0 Pid {4000 + rank:6d} on {node:>10} device {dev:2d} [0000:{0x19 + dev:02x}:00] NVIDIA H100 80GB HBM3")
        rank += 1
print("#")
print("#                                                              out-of-place                       in-place          ")
print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
n = len(nodes) * ranks
size, total, rows = low, 0.0, []
while size <= high:
    busbw = conf["busbw"] * size / (size + (4 << 20))
    algbw = busbw / (2 * (n - 1) / n) if name == "all_reduce_perf" else busbw / ((n - 1) / n)
    t = size / (algbw * 1e3) if algbw else 0.0
    redop = "sum" if name == "all_reduce_perf" else "none"
    rows.append(f"{size:12d}  {size // 4:12d}     float  {redop:>6}      -1  {t:7.1f}  {algbw:6.2f}  {busbw:6.2f}      0  {t:7.1f}  {algbw:6.2f}  {busbw:6.2f}      0")
    total, size = total + busbw, size * factor
early = conf.get("early_rows", 0)  # sizes printed before the wait: a run watched while it prints
print("\n".join(rows[:early]) if early else "", end="\n" if early else "")
sys.stdout.flush()
end = time.monotonic() + (600 if conf.get("hang") else 60)
# Under load until the test has taken its rounds; a hang ignores that release (on a loaded machine the rounds
# can end before the wall-clock cap, and a released "hang" finished its table: a healthy run, not a hang).
while time.monotonic() < end and (conf.get("hang") or not (conf.get("until") and os.path.exists(conf["until"]))):
    time.sleep(0.05)
for row in rows[early:]:
    print(row)
count = len(rows)
print("# Out of bounds values : 0 OK")
print(f"# Avg bus bandwidth    : {total / count:.4f} ")
print("#")
sys.exit(conf.get("rc", 0))
'''

IB_WRITE_BW = r'''
import sys
print("---------------------------------------------------------------------------------------")
print("                    RDMA_Write BW Test")
print(" Dual-port       : OFF\t\tDevice         : mlx5_0")
print(" Number of qps   : 1\t\tTransport type : IB")
print("---------------------------------------------------------------------------------------")
print(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]")
print(" 65536      1000           97.52              97.48                0.185927")
print("---------------------------------------------------------------------------------------")
'''

SRUN = r'''
import json, os, sys
conf = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake.json")))
if conf.get("srun_error"):
    sys.stderr.write(conf["srun_error"] + "\n")
    sys.exit(1)
args = sys.argv[1:]
opts = {}
while args and args[0].startswith("-"):
    key, _, value = args.pop(0).partition("=")
    opts[key] = value
env = dict(os.environ, SLURM_NTASKS_PER_NODE=opts.get("--ntasks-per-node", "1"),
           SLURM_JOB_NODELIST_EXPANDED=conf.get("expanded", "gpu01"))
os.execve(args[0], args, env)
'''


def install(bindir: Path, conf: dict) -> Path:
    """bindir with the fakes and their fake.json; returns bindir."""
    bindir.mkdir(parents=True, exist_ok=True)
    for name, body in (("all_reduce_perf", NCCL_TESTS), ("alltoall_perf", NCCL_TESTS), ("ib_write_bw", IB_WRITE_BW),
                       ("srun", SRUN)):
        path = bindir / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(0o755)
    (bindir / "fake.json").write_text(json.dumps(conf))
    return bindir
