"""A library's dynamic symbols, read from its ELF file as dlsym sees them; anything else is None."""

from __future__ import annotations

from pathlib import Path

from allreduce_doctor.hosts.elf_exports import defined_exports


def _libc() -> str:
    # the C library this interpreter runs on: a real shared object on every Linux CI machine
    return next(line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
                if "/libc.so" in line or "/libc-" in line)


def test_the_defined_symbols_of_a_real_library_are_read():
    assert defined_exports(_libc(), "gnu_get_libc_") == ["gnu_get_libc_release", "gnu_get_libc_version"]


def test_a_prefix_nothing_defines_is_an_empty_list():
    assert defined_exports(_libc(), "ncclNetPlugin_v") == []


def test_a_file_that_is_no_elf_or_absent_is_unknown(tmp_path):
    text = tmp_path / "libnccl-net.so"
    text.write_text("not an ELF file\n")
    truncated = tmp_path / "libcut.so"
    truncated.write_bytes(Path(_libc()).read_bytes()[:200])
    assert defined_exports(str(text), "n") is None
    assert defined_exports(str(tmp_path / "missing.so"), "n") is None
    assert defined_exports(str(tmp_path), "n") is None
    assert defined_exports(str(truncated), "gnu") is None
