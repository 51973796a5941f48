"""A rank's TCPStore call that finds the store's server gone (c10d `recvValue failed on SocketImpl(...)`) is read,
not refused: the store runs in rank 0's process, so that process left first and its own output says why. It
accuses no cause and never counts as the failure the job stopped on."""

from __future__ import annotations

from allreduce_doctor.evidence.differential import COLLECT
from tests.evidence.helpers import diagnose_json

CLOSED = ("[rank3]:[W1202 10:11:12.123456789 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=45, "
          "addr=[node-2]:51234, remote=[node-1]:29500): Connection reset by peer\n"
          "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:678 (most recent call first):\n")


def test_a_lost_store_server_is_read_and_points_at_rank_0s_own_output(tmp_path):
    rc, data, path = diagnose_json(tmp_path, CLOSED)
    assert rc == 3 and data["verdict"] == "inconclusive" and data["findings"] == []
    reasons = [i["reason"] for i in data["inconclusive"] if i["node"] == "evidence"]
    assert reasons == [f"{path}:1: c10d's TCPStore lost its server (rank 0's process, or torchrun's agent): that process "
                       "exited, crashed or tore down first; the first failure is in its own output; no cause of the "
                       "catalogue covers it", COLLECT]


def test_beside_the_failure_that_explains_it_it_adds_no_candidate(tmp_path):
    refused = ("node-1:100:100 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<40000> "
               "failed : Software caused connection abort\n")
    _rc, alone, _ = diagnose_json(tmp_path, refused)
    _rc, both, _ = diagnose_json(tmp_path, refused + CLOSED)
    assert [f["cause"] for f in both["findings"]] == [f["cause"] for f in alone["findings"]]
