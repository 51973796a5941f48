"""Enumerators: turn a glob with named parts into the instances a probe fans out over.

`/sys/class/infiniband/{device}/ports/{port}` yields one item per port with `device` and
`port` set; `read`, `first` and `links` add attributes read through the Host, `match` and
`require` filter. Everything goes through the Host, so enumeration replays from a bundle.
"""

from __future__ import annotations

import functools
import posixpath
import re

from allreduce_doctor.hosts.base import Host
from allreduce_doctor.probes.spec import EnumeratorSpec

_VAR = re.compile(r"\{(\w+)\}")
# Files the kernel puts beside the interfaces in /sys/class/net: drivers/net/bonding/bond_sysfs.c
# creates the class attribute "bonding_masters" there when the bonding module is loaded.
_NET_CLASS_FILES = frozenset({"/sys/class/net/bonding_masters"})


def fill(template: str, item: dict) -> str:
    """Substitute {var} from item; unknown vars raise KeyError (caught by the caller)."""
    parts = _parts(template)
    if len(parts) == 1:
        return template
    return "".join(str(item[part]) if i % 2 else part for i, part in enumerate(parts))


@functools.lru_cache(maxsize=1024)
def _parts(template: str) -> list[str]:
    """A template split at its {var}s: text, var, text, ... (the catalogue's templates, split once)."""
    return _VAR.split(template)


def _pattern_regex(pattern: str) -> re.Pattern:
    parts = _VAR.split(pattern)
    out = []
    for i, part in enumerate(parts):
        out.append(f"(?P<{part}>[^/]+)" if i % 2 else re.escape(part))
    return re.compile("".join(out) + "$")


def glob_named(host: Host, pattern: str, item: dict | None = None) -> list[dict]:
    """Glob `pattern` where unresolved {vars} are wildcards; return the vars of each match."""
    item = item or {}
    known = _VAR.sub(lambda m: str(item[m.group(1)]) if m.group(1) in item else m.group(0), pattern)
    regex = _pattern_regex(known)
    found = []
    for path in host.glob(_VAR.sub("*", known)):
        if path in _NET_CLASS_FILES:
            continue
        m = regex.match(path)
        if m:
            found.append({**m.groupdict(), "_path": path})
    return found


class Enumerator:
    def __init__(self, host: Host, specs: dict[str, EnumeratorSpec]) -> None:
        self.host = host
        self.specs = specs
        self._cache: dict[str, list[dict]] = {}

    def items(self, name: str) -> list[dict]:
        if name not in self._cache:
            self._cache[name] = self._enumerate(self.specs[name])
        return self._cache[name]

    def _enumerate(self, spec: EnumeratorSpec) -> list[dict]:
        if spec.source:
            base = [dict(i) for i in self.items(spec.source)]
        else:
            base = []
            for found in glob_named(self.host, spec.glob):
                found["path"] = found.pop("_path")
                base.append(found)
        items = []
        for found in base:
            if not spec.source:
                self._decorate(spec, found)
            if not self._keep(spec, found):
                continue
            for item in self._expand(spec, found):
                if spec.label:
                    try:
                        item["name"] = fill(spec.label, item)
                    except KeyError:
                        continue
                item.setdefault("name", posixpath.basename(item.get("path", "")))
                items.append(item)
        return sorted(items, key=_natural_key)

    def _expand(self, spec: EnumeratorSpec, item: dict) -> list[dict]:
        """One item per match of each `expand` glob (a RoCE LAG device's bond members); the item
        itself when it does not qualify (expand_match) or nothing matches."""
        items = [item]
        if not all(item.get(a) is not None and re.search(r, str(item[a])) for a, r in spec.expand_match.items()):
            return items
        for attr, template in spec.expand.items():
            known = {k: v for k, v in item.items() if k != attr and v is not None}
            try:
                matches = glob_named(self.host, template, known)
            except KeyError:
                continue
            found = [{**item, attr: m[attr]} for m in matches if attr in m]
            items = found or items
        return items

    def _decorate(self, spec: EnumeratorSpec, item: dict) -> None:
        for attr, template in spec.read.items():
            res = self.host.read(fill(template, item))
            item[attr] = res.text.strip() if res.ok and res.text is not None else None
        for attr, template in spec.first.items():
            matches = glob_named(self.host, template, item)
            item[attr] = matches[0][attr] if matches and attr in matches[0] else None
        for attr, template in spec.links.items():
            target = self.host.readlink(fill(template, item))
            item[attr] = posixpath.basename(target) if target else None

    @staticmethod
    def _keep(spec: EnumeratorSpec, item: dict) -> bool:
        for attr in spec.require:
            if not item.get(attr):
                return False
        for attr, regex in spec.match.items():
            value = item.get(attr)
            if value is None or not re.search(regex, str(value)):
                return False
        return True


def _natural_key(item: dict):
    name = str(item.get("name", ""))
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", name)]
