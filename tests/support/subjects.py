"""Seed 002's example subject, alice, as importable documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy

from memory.embeddings.local import LocalMiniLM
from memory.subjects import documents
from memory.subjects import services as subjects

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"


def alice_documents() -> dict[str, Any]:
    """The seed's documents, with real all-MiniLM-L6-v2 vectors where the seed elides them, each
    component in float4's shortest decimal form (how PostgreSQL stores and returns it)."""
    found = {name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in documents.DOCUMENTS}
    entries = found["embeddings"]["embeddings"]
    for entry, vector in zip(entries, LocalMiniLM().embed([e["text"] for e in entries]), strict=True):
        entry["embedding"] = [float(str(numpy.float32(x))) for x in vector]
    return found
