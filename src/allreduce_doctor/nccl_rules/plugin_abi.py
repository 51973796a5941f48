"""Which net-plugin interface versions (the `ncclNetPlugin_vN` symbols) each NCCL tag looks up.

NCCL dlopens the plugin and dlsym()s `ncclNetPlugin_vN`, newest first, from a fixed list; when it
finds none it closes the library and runs on its internal IB / Socket transports. Read at each
tag of NVIDIA/nccl:
- v2.4.2-1 .. v2.11.4-1: one symbol, NCCL_PLUGIN_SYMBOL (src/include/nccl_net.h: v2 up to 2.5,
  v3 in 2.6-2.7, v4 from 2.8), looked up in src/init.cc initNetPlugin; `NET/Plugin: Failed to find
  ncclNetPlugin_vN symbol.`, then dlclose.
- v2.12.7-1 .. v2.25.1-1: src/net.cc ncclNetPluginInit / ncclNetPluginLoad tries v5,v4 (2.12);
  v6,v5,v4 (2.13-2.18); v7,v6,v5 (2.19); v8..v5 (2.20-2.23); v9..v5 (2.24-2.25). The last word:
  `Failed to find ncclNetPlugin symbol (v4 or v5).` (2.13-2.18) or `... (>= v5). ncclNetPlugin
  symbols v4 and lower are not supported.` (2.19-2.25); dlclose.
- v2.26.2-1 .. v2.30.7-1: src/plugin/net.cc with one src/plugin/net/net_vN.cc per version:
  v10..v6 (2.26-2.27), v11..v6 (2.28-2.29), v12..v6 (2.30). 2.26-2.27 print `Failed to find
  ncclNetPlugin_vN symbol.` for each; from 2.28 `External network plugin X is unsupported`;
  ncclClosePluginLib.
"""

from __future__ import annotations

import re

# (first NCCL release of the row, the versions it looks up, newest first); rows in release order
TRIED: tuple[tuple[tuple[int, int], tuple[int, ...]], ...] = (
    ((2, 4), (2,)),
    ((2, 6), (3,)),
    ((2, 8), (4,)),
    ((2, 12), (5, 4)),
    ((2, 13), (6, 5, 4)),
    ((2, 19), (7, 6, 5)),
    ((2, 20), (8, 7, 6, 5)),
    ((2, 24), (9, 8, 7, 6, 5)),
    ((2, 26), (10, 9, 8, 7, 6)),
    ((2, 28), (11, 10, 9, 8, 7, 6)),
    ((2, 30), (12, 11, 10, 9, 8, 7, 6)),
)
# The newest release read: a later one may look up a version not listed (and drop old ones)
NEWEST_READ = (2, 30)
SYMBOL = "ncclNetPlugin_v"
_SYMBOL = re.compile(r"^ncclNetPlugin_v(\d+)$")
# The lines that end NCCL's search with no version found (the tags above), and the one that says
# one was found (`NET/Plugin: Loaded net plugin NAME (vN)`, 2.19+)
UNSUPPORTED_RE = re.compile(r"Failed to find ncclNetPlugin symbol|External network plugin .* is unsupported")
FAILED_SYMBOL_RE = re.compile(r"Failed to find ncclNetPlugin_v(\d+) symbol")
LOADED_RE = re.compile(r"Loaded net plugin .*\(v(\d+)\)")


def tried(version: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The versions this NCCL looks up, newest first; None when its version is unknown, older
    than the plugin interface (2.4) or newer than the newest release read."""
    if not version or len(version) < 2 or tuple(version[:2]) > NEWEST_READ:
        return None
    rows = [versions for first, versions in TRIED if tuple(version[:2]) >= first]
    return rows[-1] if rows else None


def exported(symbols: list[str] | None) -> tuple[int, ...] | None:
    """The N of every `ncclNetPlugin_vN` a library defines, newest first (None: not read)."""
    if symbols is None:
        return None
    return tuple(sorted({int(m.group(1)) for s in symbols if (m := _SYMBOL.match(s))}, reverse=True))


def chosen(tried_versions: tuple[int, ...] | None, exports: tuple[int, ...] | None) -> int | None | bool:
    """The version NCCL settles on (the first tried that the plugin defines), False when it finds
    none (NCCL closes the plugin), None when either side is unknown."""
    if tried_versions is None or exports is None:
        return None
    return next((v for v in tried_versions if v in exports), False)


def from_log(said: dict | None, network: str) -> dict | None:
    """What the log's plugin search says ({"mismatch", "why"}), None when it shows none of it.
    `said`: the versions it failed to find, whether its last word found none, the one it loaded
    (evidence/nccl.py NcclLog.plugin_abi). A failed version is not the end of the search (the
    next is tried): only with no `Loaded` and the log's network internal (IB, Socket) it is."""
    said = said or {}
    if said.get("loaded") is not None:
        return {"mismatch": False, "why": f"the log says `Loaded net plugin ... (v{said['loaded']})`"}
    failed = ", ".join(f"v{v}" for v in said.get("failed") or [])
    if said.get("unsupported") or (failed and network.lower() in ("ib", "socket")):
        return {"mismatch": True, "why": "the log's plugin search found no interface version this NCCL looks up"
                + (f" (not found: {failed})" if failed else "") + (f"; it runs on {network}" if network else "")}
    return None
