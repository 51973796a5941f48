"""A gzip bomb (a tiny .tar.gz of hundreds of MiB of zeros) is read with the inflated stream held
once: peak memory stays near the stream's size, not twice it (1.02 GB for 500 MiB, before)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib

ZEROS_MIB = 256


def test_gzip_of_zeros_peaks_near_its_inflated_size(tmp_path):
    bomb = tmp_path / "bomb.tar.gz"
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
    block = bytes(1 << 20)
    with open(bomb, "wb") as fh:
        for _ in range(ZEROS_MIB):
            fh.write(comp.compress(block))
        fh.write(comp.flush())
    assert bomb.stat().st_size < 1 << 20
    script = textwrap.dedent(f"""
        import json, resource
        from allreduce_doctor.errors import BundleError
        from allreduce_doctor.snapshot.bundle import open_bundle
        try:
            open_bundle({str(bomb)!r})
            message = ""
        except BundleError as err:
            message = str(err)
        try:  # this image's own peak (ru_maxrss keeps the forking process's peak across exec)
            peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
        except (OSError, StopIteration):
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({{"message": message, "peak_kib": peak}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["message"] == f"{bomb}: no manifest.json; this is not an allreduce-doctor bundle"
    peak_mib = got["peak_kib"] / 1024
    assert peak_mib < ZEROS_MIB * 1.4 + 60, f"peak {peak_mib:.0f} MiB for {ZEROS_MIB} MiB inflated"
