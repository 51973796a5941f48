"""srun's and mpirun's lines as their manuals define them, and stopping a launch as they ask.

srun(1) and slurm.conf(5) (Slurm slurm-26-05-3-1), mpirun(1) (Open MPI v5.0.10), Slurm's
src/srun/signals.c: the sources are quoted in validate/launchers.py and hosts/stopping.py.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.hosts import stopping
from allreduce_doctor.validate.launch import run_step
from allreduce_doctor.validate.launchers import config_values, mpirun_exports
from allreduce_doctor.validate.plan import Step

BENCH = "all_reduce_perf -b 1048576 -e 8589934592 -f 2 -g 1"
SHOW_CONFIG = """Configuration data as of 2026-12-04T10:00:00
AccountingStorageBackupHost = (null)
GresTypes               = {gres}
MpiDefault              = {mpi}
MpiParams               = ports=12000-12999
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "LD_LIBRARY_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in __import__("os").environ if n.startswith(("NCCL_", "UCX_", "CUDA_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PATH", str(tmp_path))


def fake(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def scontrol_says(tmp_path, mpi="pmi2", gres="gpu"):
    text = SHOW_CONFIG.format(mpi=mpi, gres=gres)
    fake(tmp_path, "scontrol", f"import sys\nassert sys.argv[1:] == ['show', 'config']\nsys.stdout.write({text!r})\n")


def dry_run(capsys, *argv):
    assert main(["validate", "--dry-run", "--benchmarks", "all_reduce_perf", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_show_config_lines_are_key_equals_value():
    assert config_values(SHOW_CONFIG.format(mpi="pmix_v4", gres="gpu,mps")) == {
        "AccountingStorageBackupHost": "(null)", "GresTypes": "gpu,mps", "MpiDefault": "pmix_v4",
        "MpiParams": "ports=12000-12999"}


def test_srun_takes_the_sites_mpi_default_and_asks_for_the_gpus(capsys, tmp_path):
    scontrol_says(tmp_path, mpi="pmi2")
    lines = dry_run(capsys, "--nodes", "gpu[1-2]")
    assert lines[4:7] == [
        "  --mpi=pmi2: the site's MpiDefault (scontrol show config)",
        "  all_reduce_perf: every rank of every node at once, 8 per node",
        f"    srun --mpi=pmi2 '--nodelist=gpu[1-2]' --nodes=2 --ntasks-per-node=8 --gpus-per-node=8 --kill-on-bad-exit=1 "
        f"--quit-on-interrupt {BENCH}"]


@pytest.mark.parametrize("mpi, note", [
    ("none", "  --mpi=pmix: the site's MpiDefault is none (no PMI)"),
    ("(null)", "  --mpi=pmix: the site's MpiDefault is (null) (no PMI)"),
])
def test_no_pmi_at_the_site_means_pmix(capsys, tmp_path, mpi, note):
    scontrol_says(tmp_path, mpi=mpi)
    lines = dry_run(capsys, "--nodes", "gpu1", "--gpus-per-node", "4")
    assert lines[4] == note
    assert lines[6] == f"    srun --mpi=pmix --nodelist=gpu1 --nodes=1 --ntasks-per-node=4 --gpus-per-node=4 " \
                       f"--kill-on-bad-exit=1 --quit-on-interrupt {BENCH}"


def test_no_gpu_gres_at_the_site_means_no_gpu_request(capsys, tmp_path):
    scontrol_says(tmp_path, mpi="pmix", gres="(null)")
    lines = dry_run(capsys, "--nodes", "gpu[1-2]", "--incast", "gpu1")
    assert lines[4:6] == ["  --mpi=pmix: the site's MpiDefault (scontrol show config)",
                          "  no GPU request: GresTypes=(null) manages no gpu (scontrol show config)"]
    assert lines[7] == f"    srun --mpi=pmix '--nodelist=gpu[1-2]' --nodes=2 --ntasks-per-node=8 --kill-on-bad-exit=1 " \
                       f"--quit-on-interrupt {BENCH}"
    assert lines[9].startswith("    srun --mpi=none --nodelist=gpu1 --nodes=1 --ntasks-per-node=1 --kill-on-bad-exit=1 ")


def test_the_flags_choose_mpi_and_gres(capsys, tmp_path):
    scontrol_says(tmp_path, mpi="none")
    lines = dry_run(capsys, "--nodes", "gpu1", "--mpi", "pmix_v5", "--gpu-request", "gres")
    assert lines[4:7] == [
        "  --mpi=pmix_v5: given with --mpi",
        "  all_reduce_perf: every rank of every node at once, 8 per node",
        f"    srun --mpi=pmix_v5 --nodelist=gpu1 --nodes=1 --ntasks-per-node=8 --gres=gpu:8 --kill-on-bad-exit=1 "
        f"--quit-on-interrupt {BENCH}"]


def test_mpirun_exports_the_jobs_variables_by_name(capsys, tmp_path, monkeypatch):
    for name, value in (("NCCL_IB_HCA", "mlx5_0"), ("UCX_TLS", "rc"), ("LD_LIBRARY_PATH", "/opt/nccl/lib"),
                        ("CUDA_HOME", "/usr/local/cuda"), ("CUDA_VISIBLE_DEVICES", "0,1"), ("API_TOKEN", "s3cr3t"),
                        ("NCCLX", "1")):
        monkeypatch.setenv(name, value)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("gpu07\ngpu09\n")
    lines = dry_run(capsys, "--hostfile", str(hostfile))
    assert lines[5] == (f"    mpirun --hostfile {hostfile} -np 16 --map-by ppr:8:node -x CUDA_HOME -x LD_LIBRARY_PATH "
                        f"-x NCCL_IB_HCA -x UCX_TLS {BENCH}")
    assert "mlx5_0" not in "\n".join(lines)  # names only: the values stay in the environment


def test_exports_are_one_name_per_x():
    assert mpirun_exports({"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring", "PATH": "/bin"}) == \
        ["-x", "NCCL_ALGO", "-x", "NCCL_DEBUG"]


# --- stopping: a fake srun that records the signals it gets and ignores them, as a stuck srun would
STUBBORN_SRUN = """
import os, signal, sys, time
log = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "signals.log"), "a")
def got(sig, frame):
    log.write(signal.Signals(sig).name + "\\n"); log.flush()
    if sig == signal.SIGINT:
        sys.stderr.write("srun: sending Ctrl-C to StepId=4242.7\\n"); sys.stderr.flush()
    if os.environ.get("EXIT_ON") == signal.Signals(sig).name:
        sys.exit(130)
signal.signal(signal.SIGINT, got)
signal.signal(signal.SIGTERM, got)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""
SCANCEL = """
import os, sys
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "scancel.log"), "a").write(" ".join(sys.argv[1:]) + "\\n")
"""


def stopped_step(tmp_path, monkeypatch, exit_on=""):
    fake(tmp_path, "srun", STUBBORN_SRUN)
    fake(tmp_path, "scancel", SCANCEL)
    monkeypatch.setattr(stopping, "GRACE_S", 0.4)
    monkeypatch.setenv("EXIT_ON", exit_on)
    monkeypatch.setattr("allreduce_doctor.validate.launch.LAUNCHER_ENV_NAMES", ("EXIT_ON",))
    stop = threading.Event()
    began = time.monotonic()
    result = run_step(Step("all_reduce_perf", [str(tmp_path / "srun"), "all_reduce_perf"], ""), 0, tmp_path / "rec", 60,
                      on_output=lambda i, name, data: stop.set() if b"ready" in data else None, stop=stop)
    log = tmp_path / "signals.log"
    return result, log.read_text().split() if log.exists() else [], time.monotonic() - began


def test_a_stuck_srun_gets_sigint_sigterm_then_scancel_of_its_step_then_sigkill(tmp_path, monkeypatch):
    result, signals, seconds = stopped_step(tmp_path, monkeypatch)
    assert signals == ["SIGINT", "SIGTERM"]
    assert (tmp_path / "scancel.log").read_text() == "4242.7\n"
    assert result.stopping == ["SIGINT", "SIGTERM", "scancel 4242.7", "SIGKILL"]
    assert (result.rc, result.error) == (None, "stopped by the user")
    assert seconds < 30


def test_an_srun_that_ends_on_sigint_gets_nothing_more(tmp_path, monkeypatch):
    result, signals, _ = stopped_step(tmp_path, monkeypatch, exit_on="SIGINT")
    assert signals == ["SIGINT"]
    assert not (tmp_path / "scancel.log").exists()
    assert result.stopping == ["SIGINT"]


def test_an_srun_that_ends_on_sigterm_is_not_cancelled(tmp_path, monkeypatch):
    result, signals, _ = stopped_step(tmp_path, monkeypatch, exit_on="SIGTERM")
    assert signals == ["SIGINT", "SIGTERM"]
    assert not (tmp_path / "scancel.log").exists()
    assert result.stopping == ["SIGINT", "SIGTERM"]


def test_ctrl_c_stops_the_launcher_before_it_goes_on(tmp_path, monkeypatch):
    from allreduce_doctor.hosts.live import run_bounded

    fake(tmp_path, "srun", STUBBORN_SRUN)
    monkeypatch.setattr(stopping, "GRACE_S", 0.3)
    taken: list[str] = []

    def interrupt(data):
        raise KeyboardInterrupt  # what Ctrl-C raises in our main thread while it reads

    with pytest.raises(KeyboardInterrupt):
        run_bounded([str(tmp_path / "srun")], 60, on_stdout=interrupt,
                    on_stop=lambda pid, wait, said: taken.extend(stopping.stop_launcher(pid, wait, said)))
    assert (tmp_path / "signals.log").read_text().split() == ["SIGINT", "SIGTERM"]
    assert taken == ["SIGINT", "SIGTERM", "scancel 4242.7", "SIGKILL"]  # scancel is not on PATH: tried, then killed


def test_the_step_is_the_last_one_srun_named():
    assert stopping.step_named(b"srun: Step created for StepId=99.0\nsrun: sending Ctrl-C to StepId=4242.7\n") == "4242.7"
    assert stopping.step_named(b"srun: forcing job termination\n") is None
