"""Canonical tags and their hash: the one implementation of seed 004, section 2.6 (resolution M-03).

`tags_hash` is one third of the join key `(story, gate, tags_hash)` between a learning and its reuse
score (INV-295-06). If two producers canonicalised tags differently, the same learning would get two
keys and its score would silently never join. INV-plan-03 therefore makes this module the only place
allowed to canonicalise tags: every producer of a learning or of a reuse score calls
`compute_tags_hash()`, and anything that needs the normalised list (for display or storage) calls
`canonical_tags()`, which the hash itself is built on, so the two can never drift apart.

Pure Python on purpose (no Django): the rule is a data-format contract, not persistence logic.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable

__all__ = ["TAGS_SEPARATOR", "TAG_PREFIX", "canonical_tags", "compute_tags_hash"]

TAG_PREFIX = "#"
"""Every canonical tag starts with it, so `python` and `#python` are the same tag (section 2.6)."""

TAGS_SEPARATOR = "\n"
"""Joins the sorted canonical tags before hashing (section 2.6: `"\\n".join(sorted(set(...)))`)."""


def _canonical_tag(tag: str) -> str:
    """One tag, in the seed's exact order of operations: NFC, strip, lower, then the `#` prefix.

    The order matters and is the seed's: NFC first so that an NFD `é` (e + combining accent) and a
    precomposed `é` compare equal; strip before the prefix so `"  python"` becomes `#python` rather
    than `#  python`. An empty or blank tag becomes the bare `#`: the seed's algorithm does exactly
    that and INV-plan-03 forbids any variant, so it is not dropped here either.
    """
    if not isinstance(tag, str):
        raise TypeError(f"tags must be strings, got {type(tag).__name__}: {tag!r}")
    normalized = unicodedata.normalize("NFC", tag).strip().lower()
    if not normalized.startswith(TAG_PREFIX):
        normalized = f"{TAG_PREFIX}{normalized}"
    return normalized


def canonical_tags(tags: Iterable[str] | None) -> list[str]:
    """The normalised, de-duplicated tags sorted in ascending code-point order (section 2.6).

    `None` counts as no tags, as in the seed. A bare string is refused with `TypeError` rather than
    iterated: `canonical_tags("python")` would otherwise yield `#p`, `#y`, ... and produce a valid
    looking but wrong key (INV-295-06).
    """
    if tags is None:
        return []
    if isinstance(tags, (str, bytes)):
        raise TypeError(f"tags must be a list of strings, not a single {type(tags).__name__}: {tags!r}")
    return sorted({_canonical_tag(tag) for tag in tags})


def compute_tags_hash(tags: Iterable[str] | None) -> str:
    """SHA-256 (lower-case hex) of the canonical tags joined by `\\n`, encoded as UTF-8 (section 2.6).

    Permutations, case, duplicates, surrounding whitespace, a missing `#` and NFD vs NFC all give
    the same hash (TC-PLAN-01, `test_tags_hash_canonical_idempotent`). No tags at all hash the empty
    string. Non-string tags raise `TypeError`: hashing `str(tag)` would invent a canonical form the
    seed does not define.
    """
    canonical = TAGS_SEPARATOR.join(canonical_tags(tags))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
