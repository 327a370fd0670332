"""The prompt's token budget (sessions/budget.py, pure): the least important chunks go first, the
required ones never, and the same chunks and budget always give the same prompt."""

from __future__ import annotations

from sessions.budget import Chunk, estimate_tokens, trim


def chunk(key: str, tokens: int, importance: int = 50, *, required: bool = False) -> Chunk:
    return Chunk(key, "x" * (4 * tokens), importance, required)


def keys(chunks: list[Chunk]) -> list[str]:
    return [chunk.key for chunk in chunks]


def test_tokens_are_estimated_at_four_characters_each_rounded_up():
    assert [estimate_tokens(text) for text in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_within_the_budget_nothing_is_dropped_and_the_order_is_kept():
    chunks = [chunk("b", 10, 10), chunk("a", 10, 90), chunk("c", 10, 50)]

    assert keys(trim(chunks, 30)) == ["b", "a", "c"]
    assert keys(trim(chunks, None)) == ["b", "a", "c"]


def test_the_least_important_chunk_goes_first_and_only_as_many_as_needed():
    chunks = [chunk("docs", 10, 50), chunk("memory", 10, 60), chunk("trivia", 10, 10), chunk("data", 10, 70)]

    assert keys(trim(chunks, 30)) == ["docs", "memory", "data"]
    assert keys(trim(chunks, 20)) == ["memory", "data"]
    assert keys(trim(chunks, 10)) == ["data"]


def test_required_chunks_are_never_dropped_even_over_budget():
    chunks = [chunk("limits", 50, 0, required=True), chunk("docs", 5, 99), chunk("identity", 50, required=True)]

    assert keys(trim(chunks, 10)) == ["limits", "identity"]


def test_between_equals_the_later_chunk_goes_first_every_time():
    chunks = [chunk("first", 10), chunk("second", 10), chunk("third", 10)]

    results = {tuple(keys(trim(chunks, 20))) for _ in range(5)}

    assert results == {("first", "second")}


def test_a_big_low_chunk_leaving_is_enough():
    chunks = [chunk("big", 100, 10), chunk("small", 5, 20), chunk("core", 5, required=True)]

    assert keys(trim(chunks, 20)) == ["small", "core"]
