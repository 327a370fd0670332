"""The prompt's token budget (seed 003 section 10: level 1 is built from chunks "with configurable
degrees of importance"; seed 001's ``memory.short_term.max_tokens`` is the budget). Pure: no Django.

When the chunks of levels 1 and 2 together exceed the budget, the least important go first, until
the rest fits. A required chunk (the limits, the agent's identity and tools, its invariants) is
never dropped, even if the required ones alone exceed the budget: a prompt without them would be
wrong, not merely shorter. Among chunks of equal importance the later one goes first, so the same
chunks and budget always give the same prompt (the provider's prompt cache depends on it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CHARS_PER_TOKEN = 4  # the usual estimate for English and JSON; no tokenizer is shared by every provider


@dataclass(frozen=True)
class Chunk:
    key: str
    text: str
    importance: int = 50
    required: bool = False

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def estimate_tokens(text: str) -> int:
    """A provider-neutral estimate: one token per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def trim(chunks: Sequence[Chunk], budget: int | None) -> list[Chunk]:
    """The chunks that fit ``budget`` tokens, in their original order; None keeps them all."""
    if budget is None:
        return list(chunks)
    total = sum(chunk.tokens for chunk in chunks)
    # Least important first; between equals, the later one (higher position) first.
    candidates = sorted(
        (position for position, chunk in enumerate(chunks) if not chunk.required),
        key=lambda position: (chunks[position].importance, -position),
    )
    dropped: set[int] = set()
    for position in candidates:
        if total <= budget:
            break
        dropped.add(position)
        total -= chunks[position].tokens
    return [chunk for position, chunk in enumerate(chunks) if position not in dropped]
