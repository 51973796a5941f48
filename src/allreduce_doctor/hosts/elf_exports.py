"""The dynamic symbols a shared library defines, read from its ELF file (pyelftools), bounded.

LiveHost's one reader of a library's bytes: NCCL finds a net plugin's entry points with dlsym
(NVIDIA/nccl src/net.cc, src/plugin/net/net_v*.cc: `ncclNetPlugin_vN`), and dlsym sees only the
dynamic symbol table (.dynsym), never .symtab. The file is opened read-only, only its headers and
.dynsym/.dynstr are read (pyelftools seeks), and a file over MAX_ELF_BYTES or not an ELF is None.
"""

from __future__ import annotations

import os
import stat

MAX_ELF_BYTES = 1 << 30  # a plugin is a few MiB; anything past this is not one
MAX_SYMBOLS = 1 << 17  # symbols walked in one table (a C++ plugin exports a few thousand)
MAX_FOUND = 64


def defined_exports(path: str, prefix: str) -> list[str] | None:
    """Sorted names of the defined (not SHN_UNDEF) dynamic symbols of `path` that start with
    `prefix`; None when the file cannot be opened, is not a regular ELF file, or is malformed."""
    from elftools.common.exceptions import ELFError  # lazy: only a live node reads libraries
    from elftools.elf.elffile import ELFFile

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ELF_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            if fh.read(4) != b"\x7fELF":
                return None
            fh.seek(0)
            return _scan(ELFFile(fh), prefix)
    except (ELFError, OSError, ValueError, KeyError, IndexError, AssertionError, TypeError):
        return None  # pyelftools raises these on a truncated or hostile file
    finally:
        if fd >= 0:
            os.close(fd)


def _scan(elf, prefix: str) -> list[str]:
    """.dynsym by section; a library stripped of its section headers still has PT_DYNAMIC, whose
    DT_SYMTAB / DT_GNU_HASH the dynamic linker itself walks (pyelftools DynamicSegment)."""
    table = elf.get_section_by_name(".dynsym")
    if table is None:
        table = next((seg for seg in elf.iter_segments() if seg["p_type"] == "PT_DYNAMIC"), None)
    if table is None:
        return []
    found: set[str] = set()
    for count, sym in enumerate(table.iter_symbols()):
        if count >= MAX_SYMBOLS or len(found) >= MAX_FOUND:
            break
        if sym.name.startswith(prefix) and sym["st_shndx"] != "SHN_UNDEF":
            found.add(sym.name)
    return sorted(found)
