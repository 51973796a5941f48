"""NCCL_IB_HCA / NCCL_SOCKET_IFNAME lists read as NCCL reads them (nccl_rules/lists.py), checked
against literal ports of NVIDIA/nccl's C: parseStringList of v2.29.7-1 (the character loop with
atoi, every tag up to v2.30.4-1) and of v2.30.7-1 (ncclOsStrSep fields), matchIf / matchIfList,
and the callers' `^` then `=` (net_ib/init.cc ncclIbInitDevices)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allreduce_doctor.nccl_rules import lists


def _c_atoi(s: str) -> int:
    return lists.atoi(s)


def _c_parse_old(string: str) -> list[tuple[str, int]]:
    """utils.cc parseStringList at v2.29.7-1, line by line."""
    out, prefix, i = [], "", 0
    while True:
        c = string[i] if i < len(string) else "\0"
        if c == ":":
            if prefix:
                out.append((prefix, _c_atoi(string[i + 1:].split("\0")[0])))
                prefix = ""
            while c not in (",", "\0"):
                i += 1
                c = string[i] if i < len(string) else "\0"
        elif c in (",", "\0"):
            if prefix:
                out.append((prefix, -1))
                prefix = ""
        else:
            prefix += c
        i += 1
        if c == "\0":
            return out


def _c_parse_new(string: str) -> list[tuple[str, int]]:
    """utils.cc parseStringList at v2.30.7-1: strtok_r on ',' (empty tokens skipped), then fields."""
    out = []
    for entry in (e for e in string.split(",") if e):
        fields = entry.split(":")
        if fields[0]:
            port = fields[1] if len(fields) > 1 else ""
            out.append((fields[0], _c_atoi(port) if port else -1))
    return out


def _c_select(spec: str, name: str, port: int, new: bool) -> bool:
    not_ = spec.startswith("^")
    spec = spec[1:] if not_ else spec
    exact = spec.startswith("=")
    spec = spec[1:] if exact else spec
    items = (_c_parse_new if new else _c_parse_old)(spec)
    hit = not items or any((name == p if exact else name.startswith(p)) and (port == -1 or q == -1 or q == port)
                           for p, q in items)
    return hit != not_


SPEC = st.text(alphabet="mlx5_01:^=, ", max_size=24)
NAMES = st.sampled_from(["mlx5_0", "mlx5_1", "mlx5_10", "mlx5", "mlx4_0", " mlx5_0"])


@given(spec=SPEC, name=NAMES, port=st.sampled_from([1, 2, -1]), version=st.sampled_from(["2.21.5", "2.30.4", "2.30.7"]))
def test_selection_is_nccls_own_at_each_grammar(spec, name, port, version):
    new = version == "2.30.7"
    assert lists.selects(spec, name, port, version) == _c_select(spec, name, port, new), (spec, name, port, version)


@pytest.mark.parametrize("spec, version, ports, selected", [
    ("=mlx5_0:1:0:0", "2.30.7", ["mlx5_0/1", "mlx5_0/2"], ["mlx5_0/1"]),   # FA-12: port 1, rail 0, plane 0
    ("=mlx5_0:1:0:0", "2.21.5", ["mlx5_0/1", "mlx5_0/2"], ["mlx5_0/1"]),   # atoi("1:0:0") == 1
    ("=mlx5_0::0:0", "2.30.7", ["mlx5_0/1", "mlx5_0/2"], ["mlx5_0/1", "mlx5_0/2"]),  # empty port: every port
    ("=mlx5_0::0:0", "2.29.2", ["mlx5_0/1", "mlx5_0/2"], []),              # atoi("") == 0: no port
    ("mlx5_1", "2.21.5", ["mlx5_1/1", "mlx5_10/1", "mlx5_2/1"], ["mlx5_1/1", "mlx5_10/1"]),  # prefix (env.rst note)
    ("^=mlx5_1", "2.21.5", ["mlx5_1/1", "mlx5_10/1"], ["mlx5_10/1"]),
    ("=^mlx5_1", "2.21.5", ["mlx5_1/1"], []),                              # '=' then '^': the name "^mlx5_1"
    ("MLX5_0", "2.21.5", ["mlx5_0/1"], []),                                # strncmp: case-sensitive
    ("mlx5_0, mlx5_1", "2.21.5", ["mlx5_0/1", "mlx5_1/1"], ["mlx5_0/1"]),  # " mlx5_1" names nothing
    ("^", "2.21.5", ["mlx5_0/1"], []),                                     # empty list matches all, negated
])
def test_nccl_ib_hca_examples(spec, version, ports, selected):
    assert [p for p in ports if lists.selects_port(spec, p, version)] == selected


def test_an_interface_is_matched_with_any_port():
    """ncclFindInterfaces passes port -1: an item's port never excludes an interface (os/linux.cc v2.30.7-1)."""
    assert lists.selects("bond0:1", "bond0") and not lists.selects("=bond", "bond0") and lists.selects("^=bond", "bond0")


def test_the_grammar_follows_the_version_and_an_empty_port_depends_on_it():
    assert (lists.grammar("2.30.4"), lists.grammar("2.30.7"), lists.grammar(None)) == ("port", "rail", None)
    assert lists.depends_on_version("=mlx5_0::0:0") and lists.depends_on_version("mlx5_0:")
    assert not lists.depends_on_version("=mlx5_0:1:0:0,mlx5_1")
