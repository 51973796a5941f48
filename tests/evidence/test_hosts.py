"""A paste of several hosts is diagnosed per host (issue 11, item 1): each host's part of the paste
is that host's node, its NCCL lines go to the host whose ranks printed them, and the verdict and
exit code follow the fleet's rule (fleet/pasted.py, evidence/hosts.py)."""

from __future__ import annotations

import json
from itertools import zip_longest

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.evidence.hosts import UNATTRIBUTED
from allreduce_doctor.export.ticket import build_ticket, fingerprint
from tests.evidence.helpers import OUTPUTS, REAL, cli, fixture_body, load_text
from tests.evidence.test_paste_from_bundle import DOWN_TABLE, HEALTHY_TABLE, SCENARIOS, diagnose_paste, paste_of
from tests.evidence.test_streaming import PYTORCH_REMOTE

LOG_ONLY = REAL / "nccl-1698-roce-status12-localgid.txt"  # NCCL lines of host mycl-g2 only


def under(host: str, paste: str) -> str:
    """A bundle's paste with every `$ argv` line typed at HOST's prompt."""
    return "\n".join(f"root@{host}:~# {line[2:]}" if line.startswith("$ ") else line for line in paste.split("\n"))


def bundle_paste(name: str) -> str:
    return paste_of(SCENARIOS / name / "bundle.tar.gz")


def outcomes(d: dict) -> list[tuple[str, str]]:
    return [(s["node"], s["outcome"]) for s in d["path"]]


def own(data: dict, host: str) -> dict:
    return next(h for h in data["hosts"] if h["host"] == host)


@pytest.mark.parametrize("faulty,cause,step", [("ib-port-down", "ib_port_down", "trunk.ports_active"),
                                              ("ib-link-degraded", "link_degraded", "trunk.link_rate")])
def test_each_host_is_diagnosed_as_its_own_node(faulty, cause, step, tmp_path, capsys):
    """gpu01's outputs (a healthy node's) and gpu02's (one port Down, or at 100 of 400 Gb/s): gpu02's
    cause on gpu02, gpu01 as its outputs alone say, exit 1 (the fleet's rule: any fault is a fault)."""
    healthy, broken = bundle_paste("ib-healthy"), bundle_paste(faulty)
    code, data = diagnose_paste(tmp_path, capsys, under("gpu01", healthy) + "\n" + under("gpu02", broken))
    _, alone_healthy = diagnose_paste(tmp_path, capsys, healthy)
    _, alone_broken = diagnose_paste(tmp_path, capsys, broken)
    assert (code, data["verdict"]) == (1, "fault")
    assert {k: data["root_cause"][k] for k in ("id", "host", "hosts")} == {"id": cause, "host": "gpu02", "hosts": ["gpu02"]}
    assert [h["host"] for h in data["hosts"]] == ["gpu01", "gpu02"]
    gpu01, gpu02 = own(data, "gpu01"), own(data, "gpu02")
    assert (gpu02["verdict"], gpu02["root_cause"]["id"]) == ("fault", cause)
    assert dict(outcomes(gpu02))[step] == "yes"
    # each host decides exactly as its outputs pasted alone
    assert (gpu01["verdict"], outcomes(gpu01)) == (alone_healthy["verdict"], outcomes(alone_healthy))
    assert gpu01["verdict"] != "fault" and gpu01["root_cause"] is None
    assert (gpu02["root_cause"]["id"], outcomes(gpu02)) == (alone_broken["root_cause"]["id"], outcomes(alone_broken))
    assert data["fleet"]["per_node"]["gpu02"]["root_cause"] == cause
    assert data["fleet"]["nodes_affected"] == ["gpu02"]
    # every host's own diagnosis names its host (and only it): its ticket's fingerprint includes it
    for d, host in ((gpu01, "gpu01"), (gpu02, "gpu02")):
        assert (d["context"]["host"], d["context"]["hosts"]) == (host, [host])
    assert build_ticket(gpu02).fingerprint == fingerprint(cause, "ib", ["gpu02"])


def test_ibstat_alone_of_two_hosts_port_down_is_found_by_the_comparison(tmp_path, capsys):
    """ibstat alone cannot tell a compute port (no GPU topology): each host is inconclusive on its
    own, and the fleet's comparison names the host whose port differs (exit 1, no host's own cause)."""
    code, data = diagnose_paste(tmp_path, capsys, f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\n[admin@gpu02 ~]$ ibstat\n{DOWN_TABLE}")
    assert (code, data["verdict"], data["root_cause"]["id"]) == (1, "fault", "setting_mismatch")
    assert "host" not in data["root_cause"] and data["fleet"]["nodes_affected"] == ["gpu02"]
    assert [(h["host"], h["verdict"]) for h in data["hosts"]] == [("gpu01", "inconclusive"), ("gpu02", "inconclusive")]
    odd = {s["key"]: s["odd"] for s in data["fleet"]["settings"] if s["odd"]}
    assert odd == {"port_state": {"gpu02": {"mlx5_1/1": "DOWN"}}}
    assert [(f["cause"], f["hosts"]) for f in data["findings"]] == [("setting_mismatch", ["gpu02"])]
    # no host decided its own checks: "every node's own diagnosis finds nothing" is not a pass
    (nodes,) = [s for s in data["path"] if s["node"] == "fleet.nodes"]
    assert (nodes["outcome"], nodes["means"]) == ("unknown", "every one of the 2 nodes' own diagnoses is inconclusive")


def test_ibstat_alone_of_two_hosts_port_at_100_of_400_is_that_hosts_cause(tmp_path, capsys):
    """A port at 100 Gb/s beside its 400 Gb/s peer is link_degraded on gpu02 from its ibstat alone."""
    slow = HEALTHY_TABLE.replace("Rate: 400", "Rate: 100", 1)
    code, data = diagnose_paste(tmp_path, capsys, f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\n[admin@gpu02 ~]$ ibstat\n{slow}")
    assert (code, data["verdict"]) == (1, "fault")
    assert {k: data["root_cause"][k] for k in ("id", "host", "hosts")} == {"id": "link_degraded", "host": "gpu02",
                                                                            "hosts": ["gpu02"]}
    assert [(h["host"], h["verdict"], (h["root_cause"] or {}).get("id")) for h in data["hosts"]] == [
        ("gpu01", "inconclusive", None), ("gpu02", "fault", "link_degraded")]
    assert [f["cause"] for f in data["findings"]][0] == "link_degraded"


def test_the_worst_host_gives_the_root_cause_whatever_the_order(tmp_path, capsys):
    """Pasted first or last, the host with the fault decides the top-level root cause."""
    healthy, broken = bundle_paste("ib-healthy"), bundle_paste("ib-port-down")
    code, data = diagnose_paste(tmp_path, capsys, under("gpu07", broken) + "\n" + under("gpu03", healthy))
    assert (code, data["root_cause"]["id"], data["root_cause"]["host"]) == (1, "ib_port_down", "gpu07")
    assert [h["host"] for h in data["hosts"]] == ["gpu07", "gpu03"]


def test_two_hosts_gid_tables_never_mix(tmp_path):
    table = fixture_body(OUTPUTS / "show_gids-roce-connectx6-ipv4.txt")
    other = table.replace("ac13:003c", "ac13:0042").replace("172.19.0.60", "172.19.0.66")
    result = load_text(tmp_path, f"root@gpu01:~# show_gids\n{table}\n[admin@gpu02 ~]$ show_gids\n{other}")
    assert list(result.hosts) == ["gpu01", "gpu02"]

    def gids(observations) -> dict:
        values = next(o.value for o in observations if o.fact == "rdma.gid_values")
        return {(r["name"], i): v for r in values for i, v in r.items() if i.isdigit()}

    alone = {host: gids(load_text(tmp_path, text, f"{host}.txt").observations)
             for host, text in (("gpu01", table), ("gpu02", other))}
    assert gids(result.hosts["gpu01"].observations) == alone["gpu01"]
    assert gids(result.hosts["gpu02"].observations) == alone["gpu02"]
    assert alone["gpu01"][("mlx5_0/1", "5")] != alone["gpu02"][("mlx5_0/1", "5")]


def test_nccl_lines_go_to_the_host_whose_ranks_printed_them(tmp_path, capsys):
    """A host that only NCCL lines name gets what its log lines alone say (the log-only verdict);
    its lines never reach the host whose prompt came before them."""
    log = LOG_ONLY.read_text()
    text = f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\nroot@gpu02:~# ibstat\n{HEALTHY_TABLE}\n{log}"
    result = load_text(tmp_path, text)
    assert list(result.hosts) == ["gpu01", "gpu02", "mycl-g2"]
    lines = {h: next(o.value for o in part.observations if o.fact == "log.nccl")["lines"] for h, part in result.hosts.items()}
    alone_lines = next(o.value for o in load_text(tmp_path, log, "log.txt").observations if o.fact == "log.nccl")["lines"]
    assert lines == {"gpu01": 0, "gpu02": 0, "mycl-g2": alone_lines} and alone_lines == 7
    code, data = diagnose_paste(tmp_path, capsys, text)
    _, alone = diagnose_paste(tmp_path, capsys, log)
    logged = own(data, "mycl-g2")
    assert (logged["verdict"], (logged["root_cause"] or {}).get("id"), outcomes(logged)) == \
        (alone["verdict"], (alone["root_cause"] or {}).get("id"), outcomes(alone))
    assert code == {"fault": 1, "inconclusive": 3}[data["verdict"]]


def test_lines_naming_no_host_are_their_own_part_never_healthy(tmp_path, capsys):
    text = f"$ ibstat\n{HEALTHY_TABLE}\nroot@gpu01:~# ibstat\n{HEALTHY_TABLE}\nroot@gpu02:~# ibstat\n{HEALTHY_TABLE}"
    result = load_text(tmp_path, text)
    assert list(result.hosts) == ["gpu01", "gpu02", UNATTRIBUTED]
    assert [t["lines"] for t in result.hosts[UNATTRIBUTED].report["tool_outputs"]] == [f"{tmp_path / 'paste.txt'}:2-23"]
    code, data = diagnose_paste(tmp_path, capsys, text)
    assert own(data, UNATTRIBUTED)["verdict"] != "healthy" and data["verdict"] != "healthy" and code != 0


def test_host_names_compare_up_to_the_first_dot(tmp_path):
    """`ssh gpu01.cluster.local` and NCCL's `gpu01:pid:tid` (the short name) are one host."""
    nccl = "gpu01:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
    text = f"$ ssh gpu01.cluster.local ibstat\n{HEALTHY_TABLE}\n$ ssh GPU02 ibstat\n{HEALTHY_TABLE}\n{nccl}"
    result = load_text(tmp_path, text)
    assert list(result.hosts) == ["gpu01", "gpu02"]
    assert next(o.value for o in result.hosts["gpu01"].observations if o.fact == "log.nccl")["lines"] == 1


def test_one_host_or_none_keeps_the_one_node_diagnosis(tmp_path, capsys):
    for text in (f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}", f"$ ibstat\n{HEALTHY_TABLE}\n{LOG_ONLY.read_text()}"):
        assert load_text(tmp_path, text).hosts == {}
        _, data = diagnose_paste(tmp_path, capsys, text)
        assert "hosts" not in data and "fleet" not in data


def test_reports_and_tickets_name_the_host(tmp_path, capsys):
    path = tmp_path / "paste.txt"
    path.write_text(under("gpu01", bundle_paste("ib-healthy")) + "\n" + under("gpu02", bundle_paste("ib-port-down")))
    assert main(["diagnose", "--evidence", str(path)]) == 1
    text = capsys.readouterr().out
    assert "\nFAULT FOUND: ib_port_down on gpu02 (critical, owner: network)\n" in text
    assert "  - setting_mismatch (critical, owner: network): a setting differs on a minority of nodes (on gpu02)\n" in text
    assert "\nFleet: 2 hosts pasted, 1 affected\n" in text and "    gpu02  fault        ib_port_down\n" in text
    assert "\n==================== host gpu02: Fault found: ib_port_down ====================\n" in text
    assert text.index("host gpu02: Fault found") < text.index("host gpu01: Inconclusive")  # faults first
    assert main(["diagnose", "--evidence", str(path), "--format", "markdown"]) == 1
    markdown = capsys.readouterr().out
    assert "\n## Fleet\n\n2 hosts pasted.\n" in markdown
    assert "\n# Host gpu02: Fault found: ib_port_down\n" in markdown and "| gpu02 | fault | ib_port_down |" in markdown
    assert main(["diagnose", "--evidence", str(path), "--export", "json"]) == 1
    ticket = json.loads(capsys.readouterr().out)
    assert ticket["title"] == "ib_port_down on 1 of 2 nodes (gpu02): a compute port is not ACTIVE"
    assert ticket["fingerprint"] == fingerprint("ib_port_down", "ib", ["gpu02"])
    assert main(["diagnose", "--evidence", str(path), "--export", "github"]) == 1
    assert "| Nodes affected | 1 of 2 checked: gpu02 |" in capsys.readouterr().out


def test_stdin_paste_of_several_hosts_reads_like_a_file(tmp_path):
    text = f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\nroot@gpu02:~# ibstat\n{DOWN_TABLE}"
    path = tmp_path / "paste.txt"
    path.write_text(text)
    piped = cli("diagnose", "--evidence", "-", "--format", "json", stdin=text.encode())
    given = cli("diagnose", "--evidence", str(path), "--format", "json")
    assert (piped.returncode, given.returncode) == (1, 1)
    strip = lambda d: [(h["host"], h["verdict"], outcomes(h)) for h in d["hosts"]]  # noqa: E731
    assert strip(json.loads(piped.stdout)) == strip(json.loads(given.stdout))
    assert [h["host"] for h in json.loads(piped.stdout)["hosts"]] == ["gpu01", "gpu02"]


def test_node_metrics_formats_refuse_a_paste_of_several_hosts(tmp_path, capsys):
    path = tmp_path / "paste.txt"
    path.write_text(f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\nroot@gpu02:~# ibstat\n{HEALTHY_TABLE}")
    assert main(["diagnose", "--evidence", str(path), "--format", "prometheus"]) == 2
    assert capsys.readouterr().err == ("allreduce-doctor: error: --format prometheus describes one node; this paste "
                                       "names 2 hosts (gpu01, gpu02): give one host's outputs alone\n")


def _rank_lines(host: str, count: int, fail_every: int = 0) -> list[str]:
    lines = [f"{host}:{100 + i % 8}:{200 + i % 8} [{i % 8}] NCCL INFO Channel {i % 32:02d}/0 : {i % 8}[{i % 8}] -> "
             f"{(i + 1) % 8}[{(i + 1) % 8}] via NET/IB/{i % 8}/GDRDMA" for i in range(count)]
    lines.insert(1, f"{host}:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>")
    for i in range(fail_every, count, fail_every) if fail_every else ():
        lines.insert(i, f"{host}:101:201 [1] include/socket.h:390 NCCL WARN Connect to 10.0.0.2<45763> failed : Connection refused")
    return lines


@pytest.mark.parametrize("prose", [False, True])
def test_a_large_log_of_several_hosts_splits_by_rank_prefix(tmp_path, prose):
    """Thousands of interleaved lines (read in bulk): each host's part holds exactly its ranks'
    lines, its failures counted on it alone, as that host's lines pasted alone say. A line of
    prose that names NCCL (PyTorch's) is read too, by the host the paste last named."""
    ours, theirs = _rank_lines("gpu01", 3000, fail_every=500), _rank_lines("gpu02", 3000)
    if prose:
        theirs.insert(1500, PYTORCH_REMOTE)
    log = "\n".join(line for pair in zip_longest(ours, theirs) for line in pair if line) + "\n"
    text = f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\nroot@gpu02:~# ibstat\n{HEALTHY_TABLE}\n{log}"
    result = load_text(tmp_path, text)
    keys = ("lines", "host_names", "transports", "network", "hcas")

    def log_of(observations) -> dict:
        value = next(o.value for o in observations if o.fact == "log.nccl")
        return {**{k: value[k] for k in keys}, "errors": {kind: e["count"] for kind, e in value["errors"].items()}}

    for host, lines in (("gpu01", ours), ("gpu02", theirs)):
        alone = log_of(load_text(tmp_path, "\n".join(lines) + "\n", f"{host}.txt").observations)
        assert log_of(result.hosts[host].observations) == alone
    assert log_of(result.hosts["gpu01"].observations)["errors"] == {"connect_refused": 5}
    assert log_of(result.hosts["gpu02"].observations)["errors"] == ({"remote_error": 1} if prose else {})


def test_an_unattributed_part_that_walks_healthy_is_inconclusive(tmp_path, capsys, monkeypatch):
    """No node is known to be the one lines naming no host show: a healthy walk over them (made
    here, as a paste alone never walks healthy) is inconclusive, and so is the paste."""
    from allreduce_doctor.session import Session
    from allreduce_doctor.status import HEALTHY

    walk = Session.diagnose

    def healthy(self):
        diagnosis = walk(self)
        diagnosis.verdict, diagnosis.root_cause, diagnosis.findings = HEALTHY, None, []
        diagnosis.inconclusive, diagnosis.healthy = [], {"id": "no_fault_found", "title": "nothing found"}
        return diagnosis

    monkeypatch.setattr(Session, "diagnose", healthy)
    text = f"$ ibstat\n{HEALTHY_TABLE}\nroot@gpu01:~# ibstat\n{HEALTHY_TABLE}\nroot@gpu02:~# ibstat\n{HEALTHY_TABLE}"
    code, data = diagnose_paste(tmp_path, capsys, text)
    verdicts = {h["host"]: h["verdict"] for h in data["hosts"]}
    assert verdicts == {"gpu01": "healthy", "gpu02": "healthy", UNATTRIBUTED: "inconclusive"}
    assert own(data, UNATTRIBUTED)["inconclusive"][-1]["reason"].startswith("these lines name no host")
    assert (code, data["verdict"]) == (3, "inconclusive")


def test_hosts_past_the_limit_are_named_not_diagnosed(tmp_path, monkeypatch):
    import allreduce_doctor.evidence.hosts as hosts

    monkeypatch.setattr(hosts, "MAX_HOSTS", 2)
    text = "".join(f"root@gpu0{n}:~# ibstat\n{HEALTHY_TABLE}\n" for n in (1, 2, 3))
    result = load_text(tmp_path, text)
    assert (list(result.hosts), result.report["hosts_left_out"]) == (["gpu01", "gpu02"], ["gpu03"])
