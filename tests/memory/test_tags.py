"""Canonical tags and `compute_tags_hash` (seed 004, section 2.6, INV-plan-03): pure tests, no database.

Expected hashes are computed here with hashlib from the canonical string the seed documents, never
from the function under test, so a change of the algorithm cannot make its own test pass.
"""

from __future__ import annotations

import hashlib
import itertools
import unicodedata

import pytest

from memory.tags import canonical_tags, compute_tags_hash


def sha256_hex(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

CAFE_NFC = "caf\u00e9"  # precomposed é
CAFE_NFD = "cafe\u0301"  # e + combining acute accent

# The documented canonical form of the tag set {python, django, café, orm}: NFC, stripped, lower-case,
# `#`-prefixed, de-duplicated, sorted by code point, joined with "\n".
CANONICAL = "#caf\u00e9\n#django\n#orm\n#python"


def test_tc_plan_01_tags_hash_canonical_idempotent() -> None:
    """TC-PLAN-01 / test_tags_hash_canonical_idempotent: permutations, case, duplicates, spaces,
    missing `#` and NFD vs NFC all give the same hash, the one of the documented canonical string."""
    expected = sha256_hex(CANONICAL)
    base = ["python", "#django", CAFE_NFC, "orm"]
    permutations = list(itertools.permutations(base))
    assert len(permutations) >= 10  # the seed asks for 10 permutations; all 24 are checked
    variants = [list(p) for p in permutations] + [
        ["PYTHON", "#Django", CAFE_NFC.upper(), "Orm"],  # case
        ["python", "python", "#django", "django", CAFE_NFC, "orm", "#ORM"],  # duplicates, with and without #
        ["  python ", "\t#django\n", f" {CAFE_NFC}", "orm  "],  # surrounding whitespace
        ["python", "#django", CAFE_NFD, "orm"],  # NFD
        ["#python", "#django", f"#{CAFE_NFD.upper()}", "#orm"],  # all prefixed, NFD, upper-case
    ]
    hashes = {compute_tags_hash(v) for v in variants}
    assert hashes == {expected}
    assert unicodedata.normalize("NFC", CAFE_NFD) == CAFE_NFC != CAFE_NFD  # the NFD case is a real one


def test_tc_plan_01_known_vector() -> None:
    """A fixed vector: the canonical string and its SHA-256 are both spelled out."""
    tags = ["Python", " #Django ", CAFE_NFD, "ORM", "python"]
    assert canonical_tags(tags) == ["#caf\u00e9", "#django", "#orm", "#python"]
    assert compute_tags_hash(tags) == sha256_hex(CANONICAL)
    assert compute_tags_hash(["b", "a"]) == sha256_hex("#a\n#b")
    assert compute_tags_hash(["b", "a"]) == "3503cae853a718858a9d592bff076163c332c94846fb1b41a39d2cbc0bd33557"


def test_tc_plan_01_hash_is_lowercase_hex_sha256() -> None:
    digest = compute_tags_hash(["python"])
    assert len(digest) == 64
    assert digest == digest.lower()
    int(digest, 16)


@pytest.mark.parametrize("empty", [None, [], ()])
def test_tc_plan_01_no_tags_hash_the_empty_string(empty: list[str] | tuple[str, ...] | None) -> None:
    """None is handled as an empty list (section 2.6: `if tags is None: tags = []`)."""
    assert canonical_tags(empty) == []
    assert compute_tags_hash(empty) == sha256_hex("") == EMPTY_SHA256


def test_tc_plan_01_hash_is_built_on_canonical_tags() -> None:
    """One implementation (INV-plan-03): the hash is the digest of the canonical list, joined by "\\n"."""
    tags = ["Zeta", "alpha", " Beta", "#alpha", "\u00c9t\u00e9"]
    canonical = canonical_tags(tags)
    assert canonical == sorted(canonical)
    assert len(canonical) == len(set(canonical))
    assert all(tag.startswith("#") for tag in canonical)
    assert compute_tags_hash(tags) == sha256_hex("\n".join(canonical))


def test_tc_plan_01_sort_is_by_code_point_after_lowering() -> None:
    """sorted() on the lowered strings: `#` prefix included, so `#10` < `#2` < `#a` < `#é`."""
    assert canonical_tags(["\u00e9t\u00e9", "A", "2", "10"]) == ["#10", "#2", "#a", "#\u00e9t\u00e9"]


def test_tc_plan_01_prefix_added_only_when_missing() -> None:
    """`#` is added when missing, never doubled, and an existing `##` is kept as written (section 2.6)."""
    assert canonical_tags(["python", "#python"]) == ["#python"]
    assert canonical_tags(["##python"]) == ["##python"]
    assert compute_tags_hash(["##python"]) != compute_tags_hash(["#python"])


def test_tc_plan_01_blank_tag_becomes_bare_prefix() -> None:
    """The seed's algorithm turns "" and blank tags into "#"; no producer may drop them differently."""
    assert canonical_tags(["", "  "]) == ["#"]
    assert compute_tags_hash(["python", " "]) == sha256_hex("#\n#python")


def test_tc_plan_01_input_is_not_mutated() -> None:
    tags = ["B", " a "]
    compute_tags_hash(tags)
    canonical_tags(tags)
    assert tags == ["B", " a "]


@pytest.mark.parametrize("bad", [[1], ["python", None], [b"python"], [["nested"]]])
def test_tc_plan_01_non_string_tag_is_refused(bad: list[object]) -> None:
    with pytest.raises(TypeError):
        compute_tags_hash(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        canonical_tags(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["python", b"python"])
def test_tc_plan_01_bare_string_is_refused_not_iterated(bad: str | bytes) -> None:
    """A single string would otherwise be hashed character by character into a wrong, valid-looking key."""
    with pytest.raises(TypeError):
        compute_tags_hash(bad)  # type: ignore[arg-type]


def test_tc_nom_06_join_key_is_univocal() -> None:
    """TC-NOM-06 (tags_hash part of INV-295-06): the same tag set spelled differently by the learnings
    producer and by the scoring producer gives one `(story, gate, tags_hash)` key; different tag sets
    give different keys."""
    learnings_side = [("PD-295", 5, ["Python", "#FAISS"]), ("PD-295", 5, ["ollama"]), ("PD-300", 3, ["python"])]
    scoring_side = [
        ("PD-295", 5, [" faiss", "#python ", "python"]),
        ("PD-295", 5, ["#Ollama"]),
        ("PD-300", 3, ["#PYTHON"]),
    ]
    learning_keys = [(story, gate, compute_tags_hash(tags)) for story, gate, tags in learnings_side]
    scoring_keys = [(story, gate, compute_tags_hash(tags)) for story, gate, tags in scoring_side]
    assert learning_keys == scoring_keys
    assert len(set(learning_keys)) == len(learning_keys)
