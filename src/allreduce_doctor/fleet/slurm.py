"""A Slurm job's nodes: `scontrol show job ID` for its node list, then `scontrol show hostnames`.

Both run through LiveHost (argv lists, timeouts), the one door that starts processes.
"""

from __future__ import annotations

import re

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.scontrol import ScontrolError, scontrol

JOB_ID = re.compile(r"\d+(?:_\d+)?(?:\+\d+)?")  # 1234, an array task 1234_7, a het component 1234+1
NODELIST = re.compile(r"(?:^|\s)NodeList=(\S+)")
JOB_STATE = re.compile(r"(?:^|\s)JobState=(\S+)")
TIMEOUT = 30.0


def _scontrol(host, job: str, args: list[str]) -> str:
    try:
        return scontrol(host, args, TIMEOUT, "fleet/scontrol")
    except ScontrolError as err:
        raise DoctorError(f"--slurm-job {job}: {err}") from None


def job_nodes(job: str, host=None) -> list[str]:
    """The host names of job `job`'s nodes, in Slurm's order."""
    if not JOB_ID.fullmatch(job):
        raise DoctorError(f"--slurm-job {job!r}: expected a job id such as 123456 (or 123456_7 for an array task)")
    if host is None:
        from allreduce_doctor.hosts.live import LiveHost

        host = LiveHost()
    text = _scontrol(host, job, ["show", "job", job])
    lists = [m for m in NODELIST.findall(text) if m not in ("(null)", "None")]
    if not lists:
        state = JOB_STATE.search(text)
        why = f" (JobState={state.group(1)})" if state else ""
        raise DoctorError(f"--slurm-job {job}: the job has no nodes allocated{why}")
    names: list[str] = []
    for nodelist in dict.fromkeys(lists):  # an array or heterogeneous job prints one record per part
        names += [n for n in _scontrol(host, job, ["show", "hostnames", nodelist]).split() if n not in names]
    if not names:
        raise DoctorError(f"--slurm-job {job}: scontrol show hostnames printed no host names")
    return names
