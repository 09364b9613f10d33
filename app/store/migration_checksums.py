"""A migration's checksum: the sha256 of the file's own text with its comments removed and
its whitespace normalized, and nothing else (no parser, no regenerated SQL).

Until this module, a migration's checksum was taken over sqlglot's regeneration of the
file (`proforma.app.store.sqlfiles.checksum`): a sqlglot release that printed any applied
migration differently would have made it read as edited, and `migrate` refuse every
existing warehouse. Text is what the file is; only what cannot change its meaning is
normalized:

- comments (`-- ...` to the end of the line, `/* ... */`) are removed;
- whitespace runs become one space where they separate two words (`CREATE TABLE`), and
  nothing beside punctuation (`x ( a )` and `x(a)` are the same text);
- quoted text ('strings', "identifiers", $$dollar quotes$$) is kept byte for byte,
  comment markers and spaces inside it included.

Keyword case is not normalized: a changed letter is a changed file.

Warehouses made before this module hold the old checksums in `schema_migrations`. They
keep opening: `accepted` takes a recorded checksum that is the old one of the file as it
is, either from the table of every shipped migration's old checksum frozen with this
module (`proforma.app.store.legacy_checksums`, so no sqlglot release can move it) or, for a
migration not in that table, from sqlglot as installed. `migrate` then rewrites such rows
to the new checksum in the same transaction as the pending migrations, so a warehouse
needs the old way once.
"""

from __future__ import annotations

import hashlib
import re

#: Characters of a word: a space between two of them is kept (as one space).
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

_TOKEN = re.compile(
    r"""
    (?P<quoted>'(?:[^']|'')*'?|"(?:[^"]|"")*"?
      |\$\$.*?(?:\$\$|\Z)|\$(?P<tag>[A-Za-z_]\w*)\$.*?(?:\$(?P=tag)\$|\Z))
    |(?P<gap>--[^\n]*|/\*.*?(?:\*/|\Z)|\s+)
    |(?P<other>[^'"$\s/-]+|.)
    """,
    re.DOTALL | re.VERBOSE,
)


def normalize_text(text: str) -> str:
    """`text` without comments, whitespace collapsed as the module says; quoted text kept."""
    out: list[str] = []
    gap = False
    for match in _TOKEN.finditer(text):
        if match.group("gap") is not None:
            gap = True
            continue
        piece = match.group(0)
        if gap and out and out[-1][-1] in _WORD and piece[0] in _WORD:
            out.append(" ")
        gap = False
        out.append(piece)
    return "".join(out)


def text_checksum(text: str) -> str:
    """sha256 of the normalized text: what `schema_migrations` records from now on."""
    return hashlib.sha256(normalize_text(text).encode()).hexdigest()


def legacy_checksum(version: int, text: str) -> str | None:
    """The checksum an earlier release recorded for this file as it is now, or None when
    it cannot be told: the frozen table's, when the file's text is the one it was frozen
    for, else sqlglot's normalization as installed (the old way, for a migration added
    after the table was frozen)."""
    from proforma.app.store.legacy_checksums import LEGACY

    frozen = LEGACY.get(version)
    current = text_checksum(text)
    if frozen is not None and frozen[1] == current:
        return frozen[0]
    try:
        from proforma.app.store.sqlfiles import checksum
    except ImportError:  # pragma: no cover - sqlglot is a dependency; belt and braces
        return None
    try:
        return checksum(text)
    except Exception:  # noqa: BLE001 - a parser that cannot read the file decides nothing
        return None


def accepted(version: int, text: str, recorded: str) -> str | None:
    """How a recorded checksum matches the file: 'current', 'legacy' (an earlier
    release's checksum of the same file), or None (the file was edited)."""
    if recorded == text_checksum(text):
        return "current"
    if recorded == legacy_checksum(version, text):
        return "legacy"
    return None
