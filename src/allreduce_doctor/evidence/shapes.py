"""The shape of an NCCL message: its text with the fields that vary per rank made alike.

Every rank of a large job prints the same few dozen messages, each with its own comm pointer, rank,
busId, color, key, peer, port and timings (init.cc `ncclCommSplit comm %p rank %d nranks %d cudaDev
%d nvmlDev %d busId %lx parent %p color %d key %d`, transport/nvls.cc `NVLS comm %p headRank %d`,
v2.21.5-1; init.cc `Init timings - %s: rank %d nranks %d total %.2f`, v2.23.4-1). Read message by
message, a 4,096-rank log is tens of thousands of distinct messages; read shape by shape, a few
dozen. The fast path reads the first line of each shape (bulk.py), so its cost follows the bytes,
not how much the ranks' numbers differ.

A shape is the message with each `0x` number written `0x` and each digit written `0`: C-speed
(one substitution and one translation over all of a block's distinct messages joined), and it
keeps the words. Two kinds of message are still read message by message, never shape by shape:
- a message that may be a failure (bulk.py `_may_fail`, decided on the first message of a shape:
  its words are every message's of that shape), read at every occurrence, as the line path does;
- a message whose numbers and names the reader keeps (VALUE_RE): the version, the networks and
  interfaces with their addresses (per host), the plugin, the environment, GPUDirect, channel
  counts, graphs, QPs, error traces. These are read as before, once per distinct message.
"""

from __future__ import annotations

import re

_HEX_RE = re.compile(rb"0x[0-9a-fA-F]+\b")
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
# The words of every message whose values nccl.py keeps (NcclLog.message, _info, _counts): its version,
# network and interface lines (`Using`), NET/ and NET[ lines, the plugin's, `NCCL_X set`, GPU Direct
# RDMA, `N coll channels`, graph patterns, trace lines (`file.cc:N -> N`), topology hints, Channel and
# Ring lines. No word has a literal digit, so every message of one shape says alike.
VALUE_RE = re.compile(rb"version|using|(?-i:\bNET[\[/])|plugin|nccl_|gpu direct rdma|coll channels|pattern \d| -> |"
                      rb"topology file|topo_file|vmbus|virtual|^\w+:? (?:channel|ring) ", re.IGNORECASE)


def shapes(keys: list[bytes]) -> list[bytes]:
    """The shape of each key (messages without a newline), in order."""
    if not keys:
        return []
    return _HEX_RE.sub(b"0x", b"\n".join(keys)).translate(_DIGITS).split(b"\n")


def is_value(key: bytes) -> bool:
    """Whether the reader keeps this message's values: read message by message, not by shape."""
    return VALUE_RE.search(key) is not None
