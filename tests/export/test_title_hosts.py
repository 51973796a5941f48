"""A ticket's title names the hosts its cause belongs to (issue 30, item 2): on a paste of several hosts,
the hosts that found it on their own, by the prompt their outputs were pasted under; never a host whose
own fault is another cause, and never "(unattributed)" for a setting pasted under a prompt."""

from __future__ import annotations

import contextlib
import copy
import io
import json

from allreduce_doctor.cli import main
from allreduce_doctor.export.ticket import build_ticket, fingerprint
from tests.evidence.helpers import DATA, fixture_body

FOUR = DATA / "pasted" / "four-hosts-p2p-and-down-port.txt"


def _diagnose(tmp_path, text: str) -> dict:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", "--evidence", str(path), "--format", "json"])
    return json.loads(out.getvalue())


def test_the_title_names_the_host_of_the_headline_cause(tmp_path):
    d = _diagnose(tmp_path, fixture_body(FOUR))
    assert [(h["host"], (h.get("root_cause") or {}).get("id")) for h in d["hosts"]] == [
        ("gpu01", "p2p_disabled_by_env"), ("gpu02", "ib_port_down"), ("gpu03", None), ("gpu04", None)]
    t = build_ticket(d)
    assert t.title == "ib_port_down on 1 of 4 nodes (gpu02): a compute port is not ACTIVE"
    assert t.fingerprint == fingerprint("ib_port_down", "ib", ["gpu02"])
    assert t.scope["nodes_affected"] == ["gpu01", "gpu02"]  # every host with a fault of its own


def test_a_setting_pasted_under_a_conda_prompt_is_that_hosts(tmp_path):
    # every port up: gpu01's NCCL_P2P_DISABLE=1, pasted under `(base) root@gpu01:~#`, is the headline
    d = _diagnose(tmp_path, fixture_body(FOUR).replace("State: Down", "State: Active")
                  .replace("Physical state: Polling", "Physical state: LinkUp").replace("Rate: 10\n", "Rate: 400\n"))
    assert [h["host"] for h in d["hosts"]] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert (d["root_cause"]["id"], d["root_cause"]["hosts"]) == ("p2p_disabled_by_env", ["gpu01"])
    assert build_ticket(d).title == "p2p_disabled_by_env on 1 of 4 nodes (gpu01): a leftover setting forbids intra-node P2P/NVLink"


def test_a_setting_typed_at_a_hosts_prompt_is_that_hosts(tmp_path):
    text = fixture_body(FOUR).replace("(base) root@gpu01:~# env | grep NCCL\nNCCL_P2P_DISABLE=1\n",
                                      "root@gpu01:~# export NCCL_P2P_DISABLE=1\nroot@gpu01:~# env | grep NCCL\n")
    d = _diagnose(tmp_path, text)
    assert [(h["host"], (h.get("root_cause") or {}).get("id")) for h in d["hosts"]][:2] == [
        ("gpu01", "p2p_disabled_by_env"), ("gpu02", "ib_port_down")]


def test_a_fleet_title_names_the_nodes_whose_own_diagnosis_found_the_cause():
    from tests.export.goldens import stored_diagnosis

    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    d["fleet"] = {"nodes_checked": 16, "nodes_affected": ["gpu-node-003", "gpu-node-017"], "settings": [],
                  "per_node": {"gpu-node-003": {"verdict": "fault", "root_cause": "roce_gid_link_local"},
                               "gpu-node-017": {"verdict": "fault", "root_cause": "pfc_not_enabled"}}}
    assert build_ticket(d).title.startswith("pfc_not_enabled on 1 of 16 nodes (gpu-node-017): ")
