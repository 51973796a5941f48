"""The ticket carries the ceiling (issue 28, item 4): a run across nodes is expected to reach what the hardware at
hand carries, not NICs x line rate, and the ticket says which resource caps it.

pcie-gen5-nic-gen4-slot: 8x ConnectX-7 NDR (400 Gb/s, 50 GB/s) in Gen4 x16 slots, 31.5 GB/s each way (PCI-SIG
Gen4 x16; hardware/ceilings.yaml pcie_spec): the ceiling is 8 x 31.5 = 252 GB/s, and 240 measured is at it. NICs x
line rate alone (400 GB/s) made it "60% of expected". ib-healthy: the same NICs in Gen5 slots, ceiling 400."""

from __future__ import annotations

import json

from allreduce_doctor.busbw_nodes import HOLD_BACK_NET
from allreduce_doctor.export import render_export
from allreduce_doctor.export.ticket import build_ticket
from tests.scenarios.expected import diagnose

GEN4 = ("NICs: 240 of about 252 GB/s across nodes (8 NICs per node x 400 Gb/s ports each capped by their PCIe Gen4 "
        "x16 link (31.5 GB/s each way)): at the hardware's limit, not a fault")


def _diagnosis(bundle: str) -> dict:
    return json.loads(json.dumps(diagnose(bundle, {"measured_busbw": "240"})))


def test_the_ticket_expects_the_ceiling_of_nics_capped_by_their_slots():
    t = build_ticket(_diagnosis("pcie-gen5-nic-gen4-slot"))
    assert t.bandwidth == {"measured": 240.0, "expected": 252.0, "unit": "GB/s", "hardware": "at_limit",
                           "hardware_note": GEN4}
    assert t.title.endswith(" (busbw 240 GB/s vs 252 GB/s expected)")
    assert t.symptom[:2] == ["Measured all-reduce busbw 240 GB/s vs 252 GB/s expected (95% of expected).",
                             f"Against the hardware's ceiling: {GEN4}."]


def test_below_the_ceiling_the_ticket_says_by_how_much_and_what_holds_it_back():
    d = _diagnosis("ib-healthy")
    t = build_ticket(d)
    note = ("NICs: 240 of about 400 GB/s across nodes (8 NICs per node x 400 Gb/s each (50 GB/s)), 40% below what it "
            f"should carry; what can hold it back: {HOLD_BACK_NET}")
    assert (t.bandwidth["expected"], t.bandwidth["hardware"], t.bandwidth["hardware_note"]) == (400.0, "below", note)
    text = render_export(d, "markdown")
    assert "| Bus bandwidth | measured 240 GB/s, expected 400 GB/s; NICs: 240 of about 400 GB/s across nodes" in text
