"""Characters that change how a text reads without being seen: bidirectional controls (U+202E
RIGHT-TO-LEFT OVERRIDE and its kin U+200E/F, U+202A-202E, U+2066-2069, U+061C), zero-width and
the other format characters (category Cf: U+200B-200D, U+FEFF, the tag characters...), control
codes but tab and line breaks (Cc), and the line and paragraph separators (Zl, Zp).

Agents write text that reviewers read. A reviewer must see such a character where it is, never
what it would do: pages show each one as a marker (``⟨U+202E⟩``). A text with right-to-left
letters (Hebrew, Arabic...) is also isolated from the page around it (``needs_isolation``), so
that it cannot reorder what comes next to it; one without them lays out the same either way.
Pure: no Django.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp"})
SHOWN_AS_IS = frozenset("\t\n\r")  # control codes that lay a text out where it can be seen
RIGHT_TO_LEFT = frozenset({"R", "AL", "AN"})  # bidirectional classes that make a text run right to left
# The planes that hold characters of those categories and classes (Unicode 15: the BMP, plane 1,
# and the tag characters of plane 14); the others have none.
_PLANES = (range(0x20000), range(0xE0000, 0xE1000))


def _class_of(chars: list[str]) -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(char) for char in chars) + "]")


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Character classes of the hidden characters and of the right-to-left ones, built once per
    process (some 40 ms)."""
    chars = [chr(code) for plane in _PLANES for code in plane]
    hidden = [char for char in chars if unicodedata.category(char) in HIDDEN_CATEGORIES and char not in SHOWN_AS_IS]
    rtl = [char for char in chars if unicodedata.bidirectional(char) in RIGHT_TO_LEFT]
    return _class_of(hidden), _class_of(rtl)


def _hidden() -> re.Pattern[str]:
    return _patterns()[0]


def needs_isolation(text: str) -> bool:
    """Whether ``text`` holds a right-to-left character (its hidden ones are shown as markers)."""
    return _patterns()[1].search(text) is not None


def split(text: str) -> Iterator[tuple[str, bool]]:
    """``text`` in order, as runs of ordinary characters (``False``) and single hidden ones (``True``)."""
    position = 0
    for found in _hidden().finditer(text):
        if found.start() > position:
            yield text[position : found.start()], False
        yield found.group(), True
        position = found.end()
    if position < len(text):
        yield text[position:], False


def marker(char: str) -> str:
    """What a reader sees in place of a hidden character: ``⟨U+202E⟩``."""
    return f"⟨U+{ord(char):04X}⟩"


def name(char: str) -> str:
    """The character's Unicode name (``RIGHT-TO-LEFT OVERRIDE``), for a tooltip."""
    return unicodedata.name(char, "control character")
