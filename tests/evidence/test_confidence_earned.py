"""Issue 29 item 3: confidence is earned. ibstat and a 2-node nccl-tests table with no NCCL line say nothing
of GPUDirect RDMA; the derived GDR state "unknown" is not "off", so gdr_disabled is a candidate, never a
high-confidence fault (before: `fault`, gdr_disabled high, from log.job.gdr.state "unknown")."""

from __future__ import annotations

import json

from tests.evidence.helpers import OUTPUTS, cli

# The real ibstat of an H100 node with its ConnectX-7 NDR ports Active (leptonai/gpud testdata, cited in the
# fixture), its provenance header cut as a user's paste has none.
IBSTAT = "".join(line for line in (OUTPUTS / "ibstat-ndr-h100-ib-all-active.txt").read_text().splitlines(True)
                 if not line.startswith("# "))
# nccl-tests' own header and row shapes (all_reduce_perf, 2 nodes x 8 ranks), a busbw far below the ports'
# rate as NVIDIA/nccl#1412 reported (about 33 GB/s on 200 Gb/s HCAs with GPUDirect RDMA off).
RANKS = "".join(f"#  Rank {r:2d} Group  0 Pid {6000 + r:6d} on {'gpu01' if r < 8 else 'gpu02'} device  {r % 8} "
                f"[0000:{r % 8:02x}:00] NVIDIA H100 80GB HBM3\n" for r in range(16))
TABLE = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1"
         " validation: 1 graph: 0\n#\n# Using devices\n" + RANKS + "#\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
         "   busbw #wrong\n"
         "  1073741824     268435456     float     sum      -1    47535   17.80   33.37      0    47743   17.72"
         "   33.22      0\n# Avg bus bandwidth    : 33.30\n")


def test_a_gdr_state_no_line_showed_decides_no_fault(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text(IBSTAT + "\n" + TABLE)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json")
    d = json.loads(proc.stdout)
    assert d["verdict"] == "inconclusive" and proc.returncode == 3
    first = d["findings"][0]
    assert first["cause"] == "gdr_disabled" and first["confidence"] in ("medium", "low")
    step = next(p for p in d["path"] if p["node"] == "nccl_log.slow_gdr")
    assert step["outcome"] == "unknown" and step["value"]["log.job.gdr.state"] is None
    assert {"node": "nccl_log.slow_gdr", "reason": "log.job.gdr.state is not shown in the evidence"} in d["inconclusive"]
