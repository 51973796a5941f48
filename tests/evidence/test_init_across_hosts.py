"""Ranks on two hosts that completed init (NCCL's `Init COMPLETE`, printed after the bootstrap's allgather of
every rank's peer info) prove the bootstrap's TCP reached across the hosts: a report's words that the job fails
across nodes no longer point at the socket interface, a firewall or a container network beside such a log
(it said "INCONCLUSIVE: wrong_socket_ifname" on a healthy 2-node log whose prose named NCCL, 2 nodes and errors)."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json, facts

WORDS = "We run on 2 nodes; the NCCL watchdog timeout is set to 30 minutes in case of errors.\n"
HEALTHY = """\
node-a:100:100 [0] NCCL INFO NCCL version 2.27.7+cuda12.9
node-a:100:100 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
node-b:200:200 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.2<0>
node-a:100:100 [0] NCCL INFO Using network IB
node-a:100:120 [0] NCCL INFO ncclCommInitRank comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1f - Init COMPLETE
node-b:200:220 [0] NCCL INFO ncclCommInitRank comm 0x56 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1f - Init COMPLETE
"""
OLD = """\
node-a:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
node-a:100:120 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE
node-b:200:220 [0] NCCL INFO comm 0x56 rank 1 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE
"""
WORDED = [("wrong_socket_ifname", "low"), ("socket_blocked", "low")]


def test_init_on_two_hosts_is_read_with_its_lines(tmp_path):
    assert facts(tmp_path, HEALTHY)["log.nccl"]["init_across_hosts"] == {
        "node-a": f"{tmp_path}/paste.txt:5", "node-b": f"{tmp_path}/paste.txt:6"}
    # NCCL 2.4's shape (no busId, no commId): the communicator is told by its size
    assert list(facts(tmp_path, OLD)["log.nccl"]["init_across_hosts"]) == ["node-a", "node-b"]


def test_words_of_a_multi_node_failure_beside_a_completed_init_accuse_nothing(tmp_path):
    rc, data, _ = diagnose_json(tmp_path, WORDS + HEALTHY)
    assert rc == 3 and data["verdict"] == "inconclusive"
    assert data["root_cause"] is None and data["findings"] == []


def test_without_the_second_host_the_words_still_name_their_candidates(tmp_path):
    one_done = WORDS + HEALTHY.rsplit("node-b:200:220", 1)[0]
    rc, data, _ = diagnose_json(tmp_path, one_done)
    assert rc == 3 and [(f["cause"], f["confidence"]) for f in data["findings"]][:2] == WORDED


def test_two_communicators_one_host_each_prove_nothing(tmp_path):
    apart = WORDS + HEALTHY.replace("commId 0x1f - Init COMPLETE\n", "commId 0x2e - Init COMPLETE\n", 1)
    assert facts(tmp_path, apart)["log.nccl"]["init_across_hosts"] == {}
    rc, data, _ = diagnose_json(tmp_path, apart)
    assert [(f["cause"], f["confidence"]) for f in data["findings"]][:2] == WORDED


def test_a_bootstrap_over_the_net_plugin_leaves_the_socket_interface_untried(tmp_path):
    over_ib = WORDS + HEALTHY.replace("Bootstrap: Using eth0:10.0.0.1<0>", "Bootstrap: Using mlx5_0:1")
    rc, data, _ = diagnose_json(tmp_path, over_ib)
    assert [(f["cause"], f["confidence"]) for f in data["findings"]][:2] == WORDED


def test_a_line_read_socket_candidate_gets_the_init_as_a_line_against_it(tmp_path):
    reset = HEALTHY + ("node-b:200:230 [0] misc/socket.cc:50 NCCL WARN socketProgressOpt: Call to recv from "
                       "10.0.0.1<45763> failed : Connection reset by peer\n")
    rc, data, path = diagnose_json(tmp_path, reset)
    head = data["findings"][0]
    assert (rc, head["cause"], head["confidence"]) == (3, "wrong_socket_ifname", "low")
    assert head["contradicting"][-1] == (f"{path}:5, {path}:6: ranks on node-a and node-b completed init (Init "
                                         "COMPLETE): NCCL's bootstrap reached every rank across the hosts over TCP")


def test_the_bulk_path_reads_it_as_the_line_path_does(tmp_path):
    ranks = [f"node-{r // 8}:{100 + r}:{100 + r} [{r % 8}] NCCL INFO " for r in range(16)]
    body = "".join(f"{p}Channel {c:02d}/0 : {r} -> {(r + 1) % 16} via P2P/IPC\n"
                   for c in range(300) for r, p in enumerate(ranks))
    done = "".join(f"{p}comm 0x{r}5 rank {r} nranks 16 cudaDev {r % 8} nvmlDev {r % 8} busId 1000 commId 0x77 - "
                   "Init COMPLETE\n" for r, p in enumerate(ranks))
    value = facts(tmp_path, body + done)["log.nccl"]["init_across_hosts"]
    assert value == {"node-0": f"{tmp_path}/paste.txt:4801", "node-1": f"{tmp_path}/paste.txt:4809"}
