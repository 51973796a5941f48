"""With no node read, a node fact the evidence reader takes from a tool's output says which paste would give
it: the inconclusive reasons and an open question's next step name the command, not only that it is missing."""

from __future__ import annotations

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.hosts.empty import PASTE_FOR, REASON, missing_reason
from tests.evidence.helpers import diagnose_json


def test_every_hint_is_for_a_fact_a_probe_provides():
    assert set(PASTE_FOR) <= Doctor.load().catalogue.facts()


def test_a_fact_with_a_hint_names_its_paste_and_one_without_keeps_the_plain_reason():
    assert missing_reason("kernel.cmdline") == f"{REASON}: paste `cat /proc/cmdline`"
    assert missing_reason("ib.counters") == REASON  # two samples under load: no one paste gives a rate


def test_the_inconclusive_reasons_of_a_paste_say_what_to_paste(tmp_path):
    error_4 = ("node1:1:1 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> "
               "with error 4, opcode 0, len 0, vendor err 81 (Send)\n")
    _rc, d, _path = diagnose_json(tmp_path, error_4)
    reasons = {i["node"]: i["reason"] for i in d["inconclusive"]}
    assert reasons["nccl_log.rdma_core"] == f"pci.acs is missing: pci.lspci: {REASON}: paste `sudo lspci -vvv`"
    assert reasons["trunk.link_flaps"] == f"kernel.events is missing: kernel.dmesg: {REASON}: paste `sudo dmesg`"
