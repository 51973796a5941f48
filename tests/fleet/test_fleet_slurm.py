"""--slurm-job: the job's nodes from a test `scontrol` on PATH, through LiveHost."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.fleet.slurm import job_nodes
from allreduce_doctor.hosts.live import LiveHost
from tests.fleet.conftest import doctor

RUNNING = "JobId=77 JobName=llama\n   JobState=RUNNING Reason=None\n   NodeList=gpu[01-02,07] BatchHost=gpu01\n"


def use(monkeypatch, env: dict) -> None:
    monkeypatch.setenv("PATH", env["PATH"])


def test_hostnames_of_the_job(monkeypatch, fake_scontrol):
    use(monkeypatch, fake_scontrol({"show job 77": (0, RUNNING, ""),
                                    "show hostnames gpu[01-02,07]": (0, "gpu01\ngpu02\ngpu07\n", "")}))
    assert job_nodes("77", LiveHost()) == ["gpu01", "gpu02", "gpu07"]


def test_an_array_job_prints_one_record_per_task(monkeypatch, fake_scontrol):
    text = "JobId=78 ArrayTaskId=1\n   NodeList=gpu01\n\nJobId=79 ArrayTaskId=2\n   NodeList=gpu[02-03]\n"
    use(monkeypatch, fake_scontrol({"show job 78": (0, text, ""), "show hostnames gpu01": (0, "gpu01\n", ""),
                                    "show hostnames gpu[02-03]": (0, "gpu02\ngpu03\n", "")}))
    assert job_nodes("78", LiveHost()) == ["gpu01", "gpu02", "gpu03"]


@pytest.mark.parametrize("answers, message", [
    ({"show job 9": (1, "", "slurm_load_jobs error: Invalid job id specified\n")},
     "--slurm-job 9: scontrol show job 9 failed: slurm_load_jobs error: Invalid job id specified"),
    ({"show job 9": (0, "JobId=9 JobState=PENDING Reason=Resources\n   NodeList=(null)\n", "")},
     "--slurm-job 9: the job has no nodes allocated (JobState=PENDING)"),
    ({"show job 9": (0, "JobId=9\n   NodeList=gpu01\n", ""), "show hostnames gpu01": (0, "", "")},
     "--slurm-job 9: scontrol show hostnames printed no host names"),
])
def test_scontrol_problems_are_one_line(monkeypatch, fake_scontrol, answers, message):
    use(monkeypatch, fake_scontrol(answers))
    with pytest.raises(DoctorError) as err:
        job_nodes("9", LiveHost())
    assert str(err.value) == message


def test_without_scontrol(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DoctorError) as err:
        job_nodes("9", LiveHost())
    assert str(err.value) == "--slurm-job 9: scontrol is not on PATH (run it where Slurm's client tools are)"


def test_the_cli_reports_a_pending_job(fake_scontrol):
    env = fake_scontrol({"show job 5": (0, "JobId=5 JobState=PENDING\n   NodeList=(null)\n", "")})
    proc = doctor("fleet", "--slurm-job", "5", env=env)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "allreduce-doctor: error: --slurm-job 5: the job has no nodes allocated (JobState=PENDING)\n"
