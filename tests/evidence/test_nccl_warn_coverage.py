"""NCCL's own WARN vocabulary (issue 12 item 1, dev6): benchmarks/signature_coverage.py's extractor on
known source text, the coverage floor at the newest tag read from the NCCL mirror, and each row of the
`# dev6 (NCCL WARN coverage)` block read through the reader in the shapes NCCL prints it."""

from __future__ import annotations

import importlib.util

import pytest

from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import ROOT
from tests.evidence.helpers import diagnose_json as _diagnose


def _load_coverage():
    # benchmarks/ is no package: the script is loaded from its file
    spec = importlib.util.spec_from_file_location("signature_coverage", ROOT / "benchmarks" / "signature_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


coverage = _load_coverage()
# The first and last rows of the block (appended after every row before it; another helper's block may follow).
DEV6_FROM, DEV6_TO = "verbs_call_failed", "algo_proto_unparsed"


def _dev6_rows() -> list:
    rows = signatures.signatures()
    start = next(i for i, r in enumerate(rows) if r.kind == DEV6_FROM)
    end = next(i for i, r in enumerate(rows) if r.kind == DEV6_TO)
    return list(rows[start:end + 1])


# -- the extractor, on source text in NCCL's shapes ------------------------------------------------
SOURCE = r'''
#define IBV_INT_CHECK(container, function, call, success_retval, name) \
  if (ret != success_retval) { \
    WARN("Call to " name " failed with error %s errno %d", strerror(ret), ret); \
    return ncclSystemError; \
  }
ncclResult_t wrap_ibv_query_port(struct ibv_context* context) {
  IBV_INT_CHECK(ibvSymbols, ibv_internal_query_port, ibv_internal_query_port(context, port_num, port_attr), 0, "ibv_query_port");
}
// WARN("a comment is no call");
static void f() {
  WARN("RAS %s:%" PRIu64 " timeout (%" PRId64 "s) on %p", peer, id, t, ptr);
  INFO(NCCL_NET, "NET/IB : Using %s", name);
  INFO(NCCL_INIT, "Could not open %s, error %d", path, rc);
  WARN(buffer);
  WARN("%s", msg);
}
'''


def test_a_macro_format_is_rendered_with_each_argument_passed_to_it():
    found = coverage.calls(SOURCE)
    assert [(lv, coverage.render(fmt)) for lv, _, fmt in found] == [
        ("WARN", "Call to ibv_query_port failed with error word errno 1"),  # at the macro's use, line 8
        ("WARN", "RAS word:1 timeout (1s) on 0x7f3a2c01d2b0"),
        ("INFO", "NET/IB : Using word"),
        ("INFO", "Could not open word, error 1"),
        ("WARN", "word"),
    ]
    assert [line for _, line, _ in found][:2] == [8, 12]
    assert coverage.opaque("%s") and not coverage.opaque("Call to %s failed")


def test_a_header_macro_is_rendered_in_the_file_that_uses_it():
    header = '#define SYSCHECK(call, name) do { \\\n  if (call == -1) { WARN("Call to " name " failed : %s", strerror(errno)); } \\\n} while (0)\n'
    shared = coverage.header_macros({"src/include/checks.h": header})
    assert list(shared) == ["SYSCHECK"]
    user = 'static int g() {\n  SYSCHECK(bind(fd, addr, len), "bind");\n}\n'
    assert [(ln, coverage.render(fmt)) for _, ln, fmt in coverage.calls(user, shared)] == [
        (2, "Call to bind failed : word")]
    assert coverage.calls(header, shared) == []  # not rendered in the header itself


def test_the_line_is_built_as_the_tag_prints_it():
    assert coverage.nccl_line("src/misc/socket.cc", 12, "WARN", "m", False) == \
        "host:1:2 [0] misc/socket.cc:12 NCCL WARN m"
    assert coverage.nccl_line("src/misc/socket.cc", 12, "WARN", "m", True) == \
        "host:1:2 [0] misc/socket.cc:12 (fn) NCCL WARN m"
    assert coverage.read_line("host:1:2 [0] init.cc:1 NCCL WARN Error : no algorithm/protocol available") == \
        "no_algorithm"
    assert coverage.read_line("host:1:2 [0] init.cc:1 NCCL WARN something NCCL never printed") is None


# -- the floor at the newest tag read (NCCL's own source, from the git mirror) ---------------------------
NEWEST = coverage.TAGS[-1]
# Measured at v2.30.7-1: 406 of 683 WARN formats classified (59.4%) with this branch's table, 40 with main's (00d8bf6).
FLOOR = {"classified": 406, "ratio": 0.59}


@pytest.mark.skipif(not (coverage.MIRROR / "HEAD").exists(), reason="no NVIDIA/nccl mirror on this machine")
def test_the_newest_tag_keeps_its_coverage():
    result = coverage.coverage(coverage.MIRROR, NEWEST)
    totals = coverage.totals(result)
    assert totals["warn"] >= 600  # the extractor still finds NCCL's WARNs
    assert totals["classified"] >= FLOOR["classified"] and totals["ratio"] >= FLOOR["ratio"], totals
    for kind in ("verbs_call_failed", "invalid_usage", "topology_error", "net_device_count_mixed", "ib_device_failed"):
        assert result["kinds"].get(kind, 0) >= 1, kind


# -- each dev6 row's examples through the reader, in each version's prefix shape ---------------------------
def _examples() -> list[tuple[str, str]]:
    return [(row.kind, ex) for row in _dev6_rows() for ex in row.examples]


@pytest.mark.parametrize("shape", ["2.4-2.30.3", "2.30.7"])
@pytest.mark.parametrize("kind,example", _examples(), ids=[f"{k}-{i}" for i, (k, _) in enumerate(_examples())])
def test_each_example_is_read_as_its_kind_with_its_host(kind, example, shape):
    src, _, msg = example.partition(" NCCL WARN ")
    func = " (ncclFunc)" if shape == "2.30.7" else ""
    log = NcclLog()
    assert log.feed(f"node7:4242:4300 [3] {src}{func} NCCL WARN {msg}", "paste.txt:1")
    assert list(log.errors) == [kind] and log.warn_other.to_dict()["count"] == 0
    assert log.errors[kind]["hosts"] == ["node7"]
    assert log.errors[kind]["first"] == f"{src.rsplit(':', 1)[0]} {msg}"  # the source file kept, 2.30.7 too


def test_the_dev6_rows_are_one_block_and_cite_nccl():
    rows = _dev6_rows()
    assert len(rows) == 38
    assert {r.source["repo"] for r in rows} == {"NVIDIA/nccl"}
    assert all(r.source["path"].startswith("src/") and r.source["versions"] for r in rows)


# -- what the diagnosis makes of them ---------------------------------------------------------------------------
def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


def test_no_algorithm_with_nccl_algo_set_is_the_tuning_override(tmp_path):
    line = ("node1:1:2 [0] enqueue.cc:1825 NCCL WARN Error : no algorithm/protocol available for function "
            "AllReduce with datatype ncclFloat32. NCCL_ALGO was set to NVLS.\n")
    rc, d, _ = _diagnose(tmp_path, line)
    assert rc == 3 and _ranked(d) == [("nccl_tuning_override", "medium")]
    assert d["findings"][0]["next_step"] == ("paste the job's NCCL_ALGO and NCCL_PROTO (the 2.27+ line names them) "
                                             "and rerun with both unset")


def test_an_nccl_algo_nccl_cannot_parse_is_the_tuning_override(tmp_path):
    line = 'node1:1:2 [0] graph/tuning.cc:103 NCCL WARN Unrecognized element token "tree2" when parsing "tree2,ring"\n'
    rc, d, _ = _diagnose(tmp_path, line)
    assert rc == 3 and _ranked(d) == [("nccl_tuning_override", "medium")]
    assert d["findings"][0]["next_step"] == "paste the job's NCCL_ALGO and NCCL_PROTO, or rerun with both unset"


def test_mixed_net_device_counts_name_a_down_port_then_nccl_ib_hca(tmp_path):
    line = ("node1:1:2 [0] init.cc:1339 (initTransportsRank) NCCL WARN Detected mixed local Net device counts "
            "across ranks (min 7, max 8). Set NCCL_IGNORE_NET_MISMATCH=1 to continue.\n")
    rc, d, _ = _diagnose(tmp_path, line)
    assert rc == 3 and [c for c, _ in _ranked(d)] == ["ib_port_down", "wrong_ib_hca"]


def test_a_kind_without_a_candidate_is_shown_as_what_happened_and_names_no_cause(tmp_path):
    line = "node1:1:2 [0] proxy.cc:1517 (ncclProxyService) NCCL WARN [Service thread] Accept failed Too many open files\n"
    rc, d, path = _diagnose(tmp_path, line)
    assert rc == 3 and d["findings"] == [] and d["verdict"] == "inconclusive"
    reasons = [i["reason"] for i in d["inconclusive"]]
    assert f"{path}:1: {signatures.by_kind()['proxy_failed'].says}; no cause of the catalogue covers it" in reasons


def test_a_lone_line_without_its_prefix_is_read_too(tmp_path):
    log = NcclLog()
    assert log.feed("Call to ibv_query_port failed with error Input/output error errno 5", "paste.txt:1")
    assert list(log.errors) == ["verbs_call_failed"]


def test_prose_that_shares_words_with_the_rows_is_no_signal():
    for text in ("We could not find real documentation for this.", "Our proxy service failed yesterday.",
                 "The topology was odd; no transport found in the docs either.", "Invalid config in my yaml"):
        assert signatures.match(text) is None, text

