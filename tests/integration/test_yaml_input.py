"""The one YAML loader (yamlsrc) on hostile input, and the probe-spec errors, word for word.

Runbooks and probe specs share it: size, depth and node limits are checked before anything is
composed, tags beyond YAML's plain ones are refused, and a file that is not YAML (or not a
runbook) is refused without quoting any of it.
"""

from __future__ import annotations

import time

import pytest

from allreduce_doctor import yamlsrc
from allreduce_doctor.cli import main
from allreduce_doctor.errors import ProbeSpecError, RunbookError
from allreduce_doctor.probes.spec import load_catalogue

SECRET = "root:$6$Zq9sEcReTsAlT$hashedpassword:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"


def validate(capsys, path) -> tuple[int, str]:
    code = main(["runbook", "validate", str(path)])
    out, err = capsys.readouterr()
    assert out == ""
    return code, err


def deep(levels: int) -> str:
    return "runbook: x\nnodes: " + "[" * levels + "]" * levels + "\n"


def test_deep_yaml_is_a_located_error_not_a_crash(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text(deep(600))  # RecursionError, exit 70, before the limit
    code, err = validate(capsys, path)
    col = 7 + yamlsrc.MAX_DEPTH  # the '[' past the limit (the document's mapping is level 1)
    assert (code, err) == (2, f"allreduce-doctor: error: {path}:2:{col}: nested deeper than {yamlsrc.MAX_DEPTH} levels\n")
    path.write_text(deep(5000))  # libyaml's scanner, when there, stops first: it looks ahead in flow collections
    code, err = validate(capsys, path)
    assert code == 2 and err in (
        f"allreduce-doctor: error: {path}:2:{col}: nested deeper than {yamlsrc.MAX_DEPTH} levels\n",
        f"allreduce-doctor: error: {path}:2:1007: YAML syntax error: exceeded maximum nesting depth (while increasing flow level)\n")


def test_deep_block_mappings_too(tmp_path):
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(1000))
    with pytest.raises(RunbookError, match=rf"^d\.yaml:{yamlsrc.MAX_DEPTH + 1}:\d+: nested deeper than {yamlsrc.MAX_DEPTH} levels$"):
        yamlsrc.parse_yaml(text, "d.yaml", RunbookError)


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch):
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"runbook: x\n" + b"#" * (3 * 1024 * 1024) + b"\n")
    monkeypatch.setattr(yamlsrc.Path, "read_bytes", lambda self: pytest.fail("read a file over the limit"))
    code, err = validate(capsys, path)
    assert (code, err) == (2, f"allreduce-doctor: error: {path}:1:1: file too large for YAML here (3.0 MiB; at most 2 MiB)\n")


def test_too_many_nodes_are_refused_before_composing(monkeypatch):
    text = "runbook: x\nnodes: [" + "1, " * (yamlsrc.MAX_NODES + 10) + "]\n"
    assert len(text) < yamlsrc.MAX_BYTES
    monkeypatch.setattr(yamlsrc.LocatedLoader, "get_single_node", lambda self: pytest.fail("composed"))
    start = time.monotonic()
    with pytest.raises(RunbookError, match=r"^n\.yaml:2:\d+: document too large \(too many nodes\)$"):
        yamlsrc.parse_yaml(text, "n.yaml", RunbookError)
    assert time.monotonic() - start < 5  # seconds; composing it took 40-95 s before the limit


def test_a_file_that_is_not_a_runbook_is_not_quoted(tmp_path, capsys):
    path = tmp_path / "shadow"
    path.write_text(SECRET)
    code, err = validate(capsys, path)
    assert (code, err) == (2, f"allreduce-doctor: error: {path}:1:1: not a runbook: expected a mapping with "
                              "'runbook', 'title', 'entry' and 'nodes' (at <document>)\n")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\xff" + SECRET.encode())
    code, err = validate(capsys, binary)
    assert (code, err) == (2, f"allreduce-doctor: error: {binary}:1:1: not UTF-8 text (invalid start byte at byte 7)\n")


# --- probe specs: the same loader, and their own schema errors --------------------------------
GOOD = """\
enumerators:
  rdma_port:
    glob: /sys/class/infiniband/*/ports/*
probes:
  - id: port_state
    provides: rdma.state
    foreach: rdma_port
    file: /sys/class/infiniband/{device}/ports/{port}/state
    parser: ib_state
"""


def spec_error(tmp_path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ProbeSpecError) as info:
        load_catalogue([path])
    return str(info.value)


def test_the_good_spec_loads(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(GOOD)
    catalogue = load_catalogue([path])
    assert catalogue.probes["port_state"].location == "p.yaml:5" and catalogue.facts() == {"rdma.state"}


@pytest.mark.parametrize(("change", "message"), [
    (("    parser: ib_state\n", "    parser: ib_state\n    timout: 3\n"),
     "p.yaml:10:5: unknown key 'timout' did you mean 'timeout'?"),
    (("    file: /sys/class/infiniband/{device}/ports/{port}/state\n", "    command: ibstat -v\n"),
     "p.yaml:8:5: probe 'port_state': 'command' must be an argv list of strings, never a shell string"),
    (("    parser: ib_state\n", "    parser: ib_stat\n"),
     "p.yaml:9:5: probe 'port_state': unknown parser 'ib_stat' did you mean 'ib_state'?"),
    (("    foreach: rdma_port\n", "    foreach: rdma_ports\n"),
     "p.yaml:5: probe 'port_state': unknown enumerator 'rdma_ports' did you mean 'rdma_port'?"),
    (("    glob: /sys", "    globb: /sys"),
     "p.yaml:3:5: unknown key 'globb' in enumerator 'rdma_port' did you mean 'glob'?"),
    (("file: /sys/class", "file: !!python/object:os.system /sys/class"),
     "p.yaml:8:11: unsupported YAML tag '!!python/object:os.system' (at probes[0].file)"),
    (("    parser: ib_state\n", "    parser: ib_state\n    provides: rdma.other\n"),
     "p.yaml:10:5: duplicate key 'provides' (first at line 6) (at probes[0].provides)"),
])
def test_probe_spec_errors_name_file_line_and_fix(tmp_path, change, message):
    old, new = change
    assert old in GOOD
    assert spec_error(tmp_path, GOOD.replace(old, new, 1)) == message


def test_probe_specs_get_the_same_limits(tmp_path):
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + \
        [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    assert "document too large (too many nodes, or aliases expanding)" in spec_error(tmp_path, "\n".join(bomb) + "\n")
    assert spec_error(tmp_path, "probes: " + "[" * 100 + "]" * 100 + "\n") == \
        f"p.yaml:1:{8 + yamlsrc.MAX_DEPTH}: nested deeper than {yamlsrc.MAX_DEPTH} levels"
    assert spec_error(tmp_path, SECRET) == "p.yaml:1:1: a probe file is a mapping with 'probes' and/or 'enumerators'"


def test_the_shipped_files_are_well_inside_the_limits():
    from allreduce_doctor.resources import probe_files, runbook_files

    for path in [*probe_files(), *runbook_files()]:
        assert path.stat().st_size < yamlsrc.MAX_BYTES // 8, path
