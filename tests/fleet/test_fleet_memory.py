"""`fleet --jobs N` holds at most N bundles of FLEET_BUNDLE_BYTES (issue 15): each worker reads one
bundle at a time and lets it go before the next, and a bundle that inflates past the cap is that
node's one-line error while the rest of the fleet is diagnosed."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

from allreduce_doctor.fleet import analyze as analyze_mod

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
HEALTHY = SCENARIOS / "roce-healthy" / "bundle.tar.gz"
MIB = 1 << 20


def big_bundle(path: Path, zeros_mib: int) -> None:
    """roce-healthy plus members of zeros: a small file that inflates to zeros_mib more."""
    with tarfile.open(HEALTHY) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    block = bytes(min(zeros_mib, 15) * MIB)
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data))
        for j in range(-(-zeros_mib // 15)):
            info = tarfile.TarInfo(f"files/var/log/big{j}")
            info.size = len(block)
            tar.addfile(info, io.BytesIO(block))


def fleet(folder: Path, healthy: int, big: int, zeros_mib: int) -> dict[str, Path]:
    folder.mkdir()
    bundles = {}
    for i in range(healthy + big):
        path = bundles[f"n{i:02d}"] = folder / f"n{i:02d}.tar.gz"
        if i < healthy:
            shutil.copy(HEALTHY, path)
        else:
            big_bundle(path, zeros_mib)
    return bundles


def test_a_bundle_over_the_fleet_cap_is_that_nodes_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(analyze_mod, "FLEET_BUNDLE_BYTES", 2 * MIB)  # the forked workers inherit it
    bundles = fleet(tmp_path / "f", healthy=16, big=2, zeros_mib=4)
    results, _ = analyze_mod.analyze(bundles, jobs=2)
    assert [results[n]["verdict"] for n in sorted(results)[:16]] == ["healthy"] * 16
    for node in ("n16", "n17"):
        assert results[node] == {"node": node, "error": (
            f"unreadable bundle: {bundles[node]}: members total over the 2 MiB limit for a bundle; refusing to read it"
            " in a fleet; diagnose it alone with `diagnose --snapshot`")}


def test_the_same_bundle_is_read_whole_by_diagnose(tmp_path, capsys):
    from allreduce_doctor.cli import main

    big_bundle(tmp_path / "big.tar.gz", 4)
    assert main(["diagnose", "--snapshot", str(tmp_path / "big.tar.gz")]) == 0


def test_workers_hold_one_capped_bundle_each(tmp_path):
    """Two bundles inflating to 300 MiB among 16: before the cap a worker peaked at 339 MiB
    (and the fleet at 381 MiB, two workers); now each worker stays under 200 MiB."""
    fleet(tmp_path / "f", healthy=16, big=2, zeros_mib=300)
    script = textwrap.dedent(f"""
        import json, resource
        from pathlib import Path
        from allreduce_doctor.fleet.analyze import analyze
        folder = Path({str(tmp_path / "f")!r})
        bundles = {{p.name.split(".")[0]: p for p in sorted(folder.iterdir())}}
        results, _ = analyze(bundles, jobs=2)
        worst_worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, the largest worker
        print(json.dumps({{"worker_kib": worst_worker, "errors": sorted(n for n, r in results.items() if "error" in r)}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["errors"] == ["n16", "n17"]
    assert got["worker_kib"] < 200 * 1024, f"a worker peaked at {got['worker_kib'] // 1024} MiB"


def test_an_archive_bigger_than_the_cap_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    """Not even opened as gzip: junk bytes would otherwise say 'truncated or corrupt archive'."""
    from allreduce_doctor.errors import BundleError
    from allreduce_doctor.hosts.snapshot import SnapshotHost
    from allreduce_doctor.snapshot import bundle as bundle_mod

    monkeypatch.setattr(bundle_mod, "_SLACK", 0)
    path = tmp_path / "n.tar.gz"
    path.write_bytes(b"\x1f\x8b" + bytes(2 * MIB))
    try:
        SnapshotHost(path, 1 * MIB, " in a fleet")
    except BundleError as err:
        message = str(err)
    assert message == f"{path}: members total over the 1 MiB limit for a bundle; refusing to read it in a fleet"
