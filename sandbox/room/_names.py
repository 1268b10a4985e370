"""Learners' names: which are accepted, and which count as the same name.

May touch: nothing (pure functions; the confusables table ships in `confusable-homoglyphs`). A name is
1 to 40 visible characters in any script. Two names are the same learner when their `name_key`s
match: NFKC, case-folded, each character replaced by the prototype it is confusable with (Unicode's
confusables table), so `bob`, `BOB` and `Bоb` (Cyrillic o) are one name. Characters that draw
nothing (controls, format characters, fillers such as U+3164 and U+2800) are refused rather than
ignored, so a name never hides a difference the instructor cannot see.
"""

from __future__ import annotations

import functools
import unicodedata

from confusable_homoglyphs.confusables import confusables_data

__all__ = ["MAX_NAME", "clean_name", "name_key", "name_problem"]

MAX_NAME = 40

_INVISIBLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x2800, 0x3164, 0xFFA0]
    + list(range(0xFE00, 0xFE10))
    + list(range(0xE0100, 0xE01F0))
)
"""Default-ignorable or blank code points that Unicode does not class as controls or format characters."""


def name_problem(name: str) -> str | None:
    """Why `name` (spaces already tidied) is not a name, or None when it is one."""
    if not 0 < len(name) <= MAX_NAME:
        return f"use 1 to {MAX_NAME} characters"
    for char in name:
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or ord(char) in _INVISIBLE:
            return f"U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')}) draws nothing: type your name plainly"
    return None


def clean_name(name: object) -> str | None:
    """A learner's name with its spaces tidied (NFC), or None when it is not one (see `name_problem`).
    Markup in a name is allowed: the page escapes it like everything else a learner sends."""
    if not isinstance(name, str):
        return None
    name = unicodedata.normalize("NFC", " ".join(name.split()))
    return None if name_problem(name) else name


@functools.cache
def _prototypes() -> dict[str, str]:
    """Character -> the one character every character confusable with it maps to."""
    found: dict[str, str] = {}
    for char, entries in confusables_data.items():
        if len(char) != 1:
            continue
        glyphs = [entry["c"] for entry in entries if len(entry["c"]) == 1]
        if len(glyphs) == 1 and char in {e["c"] for e in confusables_data.get(glyphs[0], ())}:
            if len(confusables_data[glyphs[0]]) > 1 or glyphs[0] < char:  # the table's prototype
                found[char] = glyphs[0]
    return found


def name_key(name: str) -> str:
    """The form names are compared in: NFKC, case-folded, confusables mapped to their prototype."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    prototypes = _prototypes()
    skeleton = "".join(prototypes.get(char, char) for char in folded)
    return unicodedata.normalize("NFKC", skeleton).casefold()
