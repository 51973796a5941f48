"""NCCL_SOCKET_IFNAME as an exclusion list that leaves lo makes NCCL bootstrap on loopback: a list the user
gives replaces NCCL's own `^docker,lo`, and the bootstrap takes the first interface the search admits, lo
(misc/socket.cc ncclFindInterfaces, bootstrap.cc; v2.4.8-1 to v2.30.7-1). Where NCCL printed what it chose,
or init went through across hosts, that line is the truth instead."""

from __future__ import annotations

import pytest

from allreduce_doctor.domain import LOOPBACK_FIRST, admits_loopback
from tests.evidence.helpers import diagnose_json, facts

JOB = "export NCCL_SOCKET_IFNAME={}\nmpirun -np 16 -H a:8,b:8 python train.py\n"


@pytest.mark.parametrize(("spec", "admits"), [
    ("^docker0", True), ("^=docker0,virbr0", True), ("^docker0,lo", False), ("^docker,l", False),
    ("^=lo,docker0", False), ("^=l", True), ("eth0", False), ("=eth0", False), ("", False),
])
def test_which_exclusion_lists_leave_lo(spec, admits):
    assert admits_loopback(spec) is admits


def test_a_multi_node_job_excluding_only_docker_binds_loopback(tmp_path):
    rc, data, _ = diagnose_json(tmp_path, JOB.format("^docker0"))
    assert rc == 1 and data["root_cause"]["id"] == "wrong_socket_ifname"
    bad = facts(tmp_path, JOB.format("^docker0"))["log.job"]["bad_socket_ifaces"]
    assert bad == [{"setting": "NCCL_SOCKET_IFNAME", "value": "^docker0", "why": LOOPBACK_FIRST}]


@pytest.mark.parametrize("shown", [
    "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n",  # what it chose: a routed interface
    "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - Init COMPLETE\n"
    "b:2:2 [0] NCCL INFO comm 0x2 rank 8 nranks 16 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - Init COMPLETE\n",
])
def test_what_nccl_printed_outranks_what_the_setting_would_choose(tmp_path, shown):
    assert facts(tmp_path, JOB.format("^docker0") + shown)["log.job"]["bad_socket_ifaces"] == []


@pytest.mark.parametrize("launch", ["torchrun --standalone --nproc_per_node=8 train.py",  # one host
                                    "python train.py"])  # the hosts are not shown: loopback may be all it needs
def test_unless_the_job_spans_hosts_loopback_is_no_fault(tmp_path, launch):
    assert facts(tmp_path, f"export NCCL_SOCKET_IFNAME=^docker0\n{launch}\n")["log.job"]["bad_socket_ifaces"] == []
