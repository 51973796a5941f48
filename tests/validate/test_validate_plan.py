"""The plan and the command line: what would run, through which launcher, and the one-line refusals."""

from __future__ import annotations

import json

import pytest

from allreduce_doctor.cli import build_parser, main
from allreduce_doctor.validate.plan import Plan, Step, parse_size, sizes
from allreduce_doctor.validate.run import plan_from_args

NO_TOOLS = "/nonexistent"  # PATH without nccl-tests: a dry run still shows the plan


@pytest.fixture(autouse=True)
def outside_slurm(monkeypatch):
    for name in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", NO_TOOLS)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_dry_run_prints_the_plan_and_runs_nothing(capsys):
    code, out, err = run_cli(capsys, "validate", "--dry-run", "--nodes", "gpu[01-04]")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "validate plan: 4 nodes (--nodes gpu[01-04]), 8 ranks per node, launcher srun",
        "  sizes 1.0 MiB to 8.0 GiB, x2 per step",
        "  counters sampled on every node every 5s (fleet fan-out, read-only)",
        "  wall-clock cap 300s; about 61.0 TiB sent by all ranks (NVLink included)",
        "  --mpi=pmix: the site's MpiDefault is unknown: scontrol is not on PATH (run it where Slurm's client tools are)",
        "  all_reduce_perf: every rank of every node at once, 8 per node",
        "    srun --mpi=pmix '--nodelist=gpu[01-04]' --nodes=4 --ntasks-per-node=8 --gpus-per-node=8 --kill-on-bad-exit=1 "
        "--quit-on-interrupt all_reduce_perf -b 1048576 -e 8589934592 -f 2 -g 1",
        "  alltoall_perf: every rank of every node at once, 8 per node",
        "    srun --mpi=pmix '--nodelist=gpu[01-04]' --nodes=4 --ntasks-per-node=8 --gpus-per-node=8 --kill-on-bad-exit=1 "
        "--quit-on-interrupt alltoall_perf -b 1048576 -e 8589934592 -f 2 -g 1",
    ]


def test_a_launcher_template_is_filled_word_by_word(capsys):
    code, out, _ = run_cli(capsys, "validate", "--dry-run", "--nodes", "gpu[01-02]", "--gpus-per-node", "4",
                           "--benchmarks", "all_reduce_perf",
                           "--launcher", "srun --mpi=pmix -N {nodes} --ntasks-per-node {ranks_per_node} -w {nodelist}")
    assert code == 0
    assert "    srun --mpi=pmix -N 2 --ntasks-per-node 4 -w 'gpu[01-02]' all_reduce_perf -b 1048576 -e 8589934592 -f 2 -g 1" \
        in out.splitlines()


def test_mpirun_takes_the_nodes_from_the_hostfile(capsys, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the job's nodes\ngpu07 slots=8\ngpu09 slots=8\n")
    code, out, _ = run_cli(capsys, "validate", "--dry-run", "--hostfile", str(hostfile), "--benchmarks", "alltoall_perf")
    assert code == 0
    assert out.splitlines()[0] == f"validate plan: 2 nodes (--hostfile {hostfile}), 8 ranks per node, launcher mpirun"
    assert f"    mpirun --hostfile {hostfile} -np 16 --map-by ppr:8:node alltoall_perf -b 1048576 -e 8589934592 -f 2 -g 1" \
        in out.splitlines()


def test_incast_runs_one_server_per_sender_on_the_receiver(capsys):
    code, out, _ = run_cli(capsys, "validate", "--dry-run", "--nodes", "gpu[1-3]", "--benchmarks", "all_reduce_perf",
                           "--incast", "gpu1", "--incast-seconds", "5")
    lines = out.splitlines()
    assert code == 0
    assert lines[-8:] == [
        "  incast: server on gpu1 for gpu2 (port 18515)",
        "    srun --mpi=none --nodelist=gpu1 --nodes=1 --ntasks-per-node=1 --gres=none --kill-on-bad-exit=1 --quit-on-interrupt "
        "ib_write_bw --report_gbits -D 5 -p 18515",
        "  incast: client gpu2 -> gpu1",
        "    srun --mpi=none --nodelist=gpu2 --nodes=1 --ntasks-per-node=1 --gres=none --kill-on-bad-exit=1 --quit-on-interrupt "
        "ib_write_bw --report_gbits -D 5 -p 18515 gpu1",
        "  incast: server on gpu1 for gpu3 (port 18516)",
        "    srun --mpi=none --nodelist=gpu1 --nodes=1 --ntasks-per-node=1 --gres=none --kill-on-bad-exit=1 --quit-on-interrupt "
        "ib_write_bw --report_gbits -D 5 -p 18516",
        "  incast: client gpu3 -> gpu1",
        "    srun --mpi=none --nodelist=gpu3 --nodes=1 --ntasks-per-node=1 --gres=none --kill-on-bad-exit=1 --quit-on-interrupt "
        "ib_write_bw --report_gbits -D 5 -p 18516 gpu1",
    ]


@pytest.mark.parametrize("argv, message", [
    (["--nodes", "gpu1", "--launcher", "srun -N {count}"],
     "--launcher: unknown placeholder {count}; use {nodes}, {nodelist}, {ranks_per_node}, {ntasks}, {hostfile}"),
    (["--nodes", "gpu1", "--max-bytes", "8T"], "--max-bytes '8T': expected a size such as 1M or 8G (K, M, G: powers of 1024)"),
    (["--nodes", "gpu1", "--min-bytes", "1G", "--max-bytes", "1M"], "--min-bytes 1G is larger than --max-bytes 1M"),
    (["--nodes", "gpu1", "--benchmarks", "sendrecv_perf"], "--benchmarks 'sendrecv_perf': choose from all_reduce_perf, alltoall_perf"),
    (["--nodes", "gpu[1-2]", "--incast", "gpu9"], "--incast gpu9: not one of the nodes (gpu1, gpu2)"),
    (["--nodes", "gpu1", "--factor", "1"], "--factor 1: expected 2 to 64"),
    ([], "no nodes: give --nodes NODESET, --slurm-job ID or --hostfile FILE, or run inside a Slurm allocation"),
])
def test_bad_input_gets_one_line(capsys, argv, message):
    code, out, err = run_cli(capsys, "validate", "--dry-run", *argv)
    assert (code, out, err) == (2, "", f"allreduce-doctor: error: {message}\n")


def test_a_real_run_needs_the_tools_an_allocation_and_a_yes(capsys, tmp_path, monkeypatch):
    code, _, err = run_cli(capsys, "validate", "--nodes", "gpu1")
    assert (code, err) == (2, "allreduce-doctor: error: srun runs inside an allocation: start one (salloc -N ...), or "
                              "give --hostfile FILE (mpirun) or --launcher TEMPLATE\n")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    code, _, err = run_cli(capsys, "validate", "--nodes", "gpu1")
    assert (code, err) == (2, "allreduce-doctor: error: all_reduce_perf is not on PATH: build nccl-tests (or perftest) "
                              "and give --nccl-tests DIR\n")
    from tests.validate.fakes import install

    bindir = install(tmp_path / "bin", {"busbw": 1.0})
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, _, err = run_cli(capsys, "validate", "--nodes", "gpu1", "--nccl-tests", str(bindir))
    assert (code, err) == (2, "allreduce-doctor: error: validate drives traffic over the fabric: confirm with --yes "
                              "(see the plan with --dry-run)\n")


def test_bytes_moved_follows_the_ring_and_all_to_all_volumes():
    plan = Plan(["a", "b"], "test", "srun", 1, 1 << 20, 4 << 20, 2, 5.0, 300.0,
                [Step("all_reduce_perf", [], ""), Step("alltoall_perf", [], "")])
    per_size_sum = (1 + 2 + 4) << 20  # 1M, 2M, 4M
    assert sizes(1 << 20, 4 << 20, 2) == [1 << 20, 2 << 20, 4 << 20]
    assert plan.bytes_moved() == per_size_sum * 21 * 2 * (2 * 1 + 1)  # (20 iters + 1 warm-up) x 2 placements
    assert parse_size("8g", "--max-bytes") == 8 << 30


def test_a_record_that_points_outside_itself_is_refused(tmp_path, capsys):
    root = tmp_path / "rec"
    (root / "steps").mkdir(parents=True)
    args = build_parser().parse_args(["validate", "--dry-run", "--nodes", "gpu1"])
    plan = plan_from_args(args)[0](1, root)
    record = {"format": 1, "plan": plan.to_dict(), "steps": [],
              "rounds": [{"index": 0, "step": None, "bundles": {"gpu1": "../../etc/passwd"}, "failed": {}}]}
    (root / "validate.json").write_text(json.dumps(record))
    code, out, err = run_cli(capsys, "diagnose", "--snapshot", str(root))
    assert (code, out) == (2, "")
    assert err == f"allreduce-doctor: error: {root / 'validate.json'}: the path '../../etc/passwd' leaves the record\n"


def test_a_slurm_job_from_outside_runs_its_step_in_that_job(capsys, tmp_path, monkeypatch):
    import sys

    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f"#!{sys.executable}\nimport sys\n"
                        "print('JobId=4242 JobState=RUNNING NodeList=gpu[01-02]' if sys.argv[1:3] == ['show', 'job'] "
                        "else 'gpu01\\ngpu02')\n")
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, _ = run_cli(capsys, "validate", "--dry-run", "--slurm-job", "4242", "--benchmarks", "all_reduce_perf")
    assert code == 0
    assert out.splitlines()[0] == "validate plan: 2 nodes (Slurm job 4242), 8 ranks per node, launcher srun"
    assert ("    srun --jobid=4242 --overlap --mpi=pmix --nodelist=gpu01,gpu02 --nodes=2 --ntasks-per-node=8 --gpus-per-node=8 "
            "--kill-on-bad-exit=1 --quit-on-interrupt all_reduce_perf -b 1048576 -e 8589934592 -f 2 -g 1") in out.splitlines()


def test_tui_needs_a_terminal_and_dry_run_still_prints_the_plan(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, out, err = run_cli(capsys, "validate", "--nodes", "gpu1", "--tui")
    assert (code, out, err) == (2, "", "allreduce-doctor: error: --tui needs a terminal; without it validate prints a "
                                       "progress line and the report\n")
    code, out, _ = run_cli(capsys, "validate", "--nodes", "gpu1", "--tui", "--dry-run")
    assert code == 0 and out.startswith("validate plan: 1 nodes (--nodes gpu1)")
