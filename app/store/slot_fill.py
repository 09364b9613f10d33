"""Filling a SQL file's `{{ prefix_name }}` slots from a registry (the metric slots of
app/store/metric_sql.py, the family slots of app/store/family_sql.py): one way to find a
slot, refuse an unknown one and fingerprint what the slots hold."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping

Slots = Mapping[str, Callable[[], str]]


def expand(text: str, prefix: str, slots: Slots) -> str:
    """`text` with its `{{ <prefix>_... }}` slots filled (other text unchanged); a slot
    the registry does not make is a KeyError naming the known ones."""
    if f"{prefix}_" not in text:
        return text
    pattern = re.compile(r"\{\{\s*(" + re.escape(prefix) + r"_[a-z_]+)\s*\}\}")

    def fill(m: re.Match) -> str:
        key = m.group(1)
        if key not in slots:
            raise KeyError(f"unknown {prefix} slot {{{{ {key} }}}}; known: {', '.join(slots)}")
        return slots[key]()

    return pattern.sub(fill, text)


def fingerprint(slots: Slots) -> str:
    """A digest of every slot's text: it changes whenever a definition does."""
    h = hashlib.sha256()
    for key, make in slots.items():
        h.update(f"{key}\0{make()}\0".encode())
    return h.hexdigest()[:16]
