"""Data for ``python -m bench subjects``: seed-002 texts and short questions, how memories are laid
out among subjects, their vectors, exact per-subject neighbours and recall, the binary COPY rows of
``memory_embedding`` with their subject, and a generated history of 10 000 messages as the five
seed-002 documents. A helper module, not a benchmark.

No Django here (numpy and the stdlib only), so the data is generated and checked before the
database is touched. The vectors follow ``bench/vectors.py`` (its module docstring says why they
are clustered); what is added here is who owns them:

* **A subject's memories are about its topics.** Each subject draws a few clusters as its topics
  (``max(3, ceil(rows / 20))``, all of them for a subject holding everything) and its memories
  from those. Topics are shared between subjects, as people share interests: the rows nearest to
  a question about jazz belong to many subjects, which is what a search filtered to one subject
  has to get through.
* **Sizes are skewed**: by default 10 real subjects of 1 000 memories, 1 subject of 10 000, 10
  of 1 000, 100 of 100 and 9 879 small ones (1 + a multinomial share, ~6) for 100 000 memories
  among 10 000 subjects.
* **Memories arrive over time**, interleaved between subjects: ids (and so the physical order of
  the COPY) are a random permutation, so one subject's rows are scattered over the heap as they
  would be in production, not packed together as a per-subject bulk load would leave them.
* **The real subjects**: 10 subjects of 1 000 memories each whose vectors are real
  all-MiniLM-L6-v2 embeddings of generated seed-002 texts (conversation summaries, preferences,
  events; the same templates and topics, each with its own name), searched with real embeddings
  of short French questions. Other people's memories about jazz are what crowds a subject's HNSW
  candidates for a question about jazz, as in production. The first of them, alone, is the 1k
  one-subject scenario.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from bench.vectors import (
    COPY_HEADER,
    COPY_TRAILER,
    DIMENSION,
    PG_EPOCH,
    TIE_TOLERANCE,
    ClusterSpec,
    _clusters,
    _embedding_dtype,
)

# --- Texts ---------------------------------------------------------------------------------------

NAMES = ("Alice", "Bruno", "Chloé", "David", "Emma", "Farid", "Giulia", "Hugo", "Inès", "Jules", "Karim", "Léa")
CATEGORIES = {
    "musique": ("jazz", "rock", "musique classique", "rap", "électro", "chanson française", "blues", "reggae"),
    "nourriture": ("pizza", "sushi", "couscous", "ramen", "fromage", "chocolat noir", "tajine", "crêpes"),
    "sport": ("course à pied", "natation", "escalade", "yoga", "vélo", "tennis", "football", "boxe"),
    "lecture": (
        "romans policiers",
        "science-fiction",
        "poésie",
        "bandes dessinées",
        "biographies",
        "mangas",
        "essais historiques",
        "fantasy",
    ),
    "cinéma": (
        "films d'animation",
        "westerns",
        "documentaires",
        "comédies romantiques",
        "films d'horreur",
        "cinéma coréen",
        "thrillers",
        "séries policières",
    ),
    "voyage": ("le Japon", "l'Italie", "l'Islande", "le Maroc", "le Canada", "le Portugal", "le Vietnam", "l'Écosse"),
    "instrument": ("guitare", "piano", "violon", "batterie", "saxophone", "ukulélé", "flûte", "basse"),
    "activité": (
        "jardinage",
        "photographie",
        "randonnée",
        "cuisine",
        "peinture",
        "jeux de société",
        "méditation",
        "bricolage",
    ),
}
ITEMS = [(category, item) for category, items in CATEGORIES.items() for item in items]
LIFE = (
    "un projet de travail difficile",
    "un déménagement",
    "un examen important",
    "un entretien d'embauche",
    "la naissance de son neveu",
    "un conflit avec un collègue",
    "ses prochaines vacances",
    "un souci de santé",
    "une rupture",
    "un nouveau travail",
    "la rénovation de son appartement",
    "l'adoption d'un chat",
)
FEELINGS = ("frustrations", "inquiétudes", "joies", "doutes", "espoirs")
ADVICE = (
    "la gestion du stress",
    "les techniques de productivité",
    "l'organisation du temps",
    "le sommeil",
    "la motivation",
    "la communication",
    "l'équilibre entre travail et vie personnelle",
)
FOLLOW = (
    "Elle a demandé des conseils pour progresser.",
    "Discussion sur ses débuts.",
    "Échange sur ses meilleurs souvenirs.",
    "Il voudrait y consacrer plus de temps.",
    "Questions sur le matériel à acheter.",
    "Comparaison avec ce qu'elle aimait enfant.",
)
QUOTES = ("j'aime beaucoup {item}", "j'adore {item}", "je n'aime pas trop {item}", "je voudrais découvrir {item}")
EVENTS = (
    "{name} a commencé {life}",
    "{name} se prépare pour {life}",
    "{name} a terminé {life}",
    "{name} s'inquiète pour {life}",
)
QUESTIONS = (
    "Qu'est-ce que j'aime en {category} ?",
    "Tu te souviens de ce que j'ai dit sur {item} ?",
    "Est-ce que je t'ai parlé de {item} ?",
    "Que penses-tu de mon goût pour {item} ?",
    "Quels conseils m'as-tu donnés sur {advice} ?",
    "Où en est {life} ?",
    "Quels sont mes {category} préférés ?",
    "Je t'ai déjà dit que j'aimais {item} ?",
)
SENTIMENTS = ("positive", "negative", "neutral", "mixed")
MEMORY_TYPES = ("conversation_summary", "preference", "event")
KEY_PREFIX = {"conversation_summary": "conv", "preference": "pref", "event": "event"}


def summary_text(rng: random.Random, name: str) -> str:
    """A conversation summary in the seed's style (2-3 sentences generated by an LLM)."""
    if rng.random() < 0.6:
        category, item = rng.choice(ITEMS)
        return f"{name} a parlé de sa passion pour {item} ({category}). {rng.choice(FOLLOW)}"
    return f"{name} a partagé ses {rng.choice(FEELINGS)} sur {rng.choice(LIFE)}. Discussion sur {rng.choice(ADVICE)}."


def preference_text(rng: random.Random, name: str) -> str:
    """As ``memory.subjects.services._fact_text`` writes a preference: category, item, sentiment, context."""
    category, item = rng.choice(ITEMS)
    quote = rng.choice(QUOTES).format(item=item)
    return f"{category}: {item} ({rng.choice(SENTIMENTS[:2])}). {name} a dit '{quote}'"


def event_text(rng: random.Random, name: str) -> str:
    return rng.choice(EVENTS).format(name=name, life=rng.choice(LIFE))


def memory_text(rng: random.Random, name: str) -> tuple[str, str]:
    """(type, text) of one memory: half conversation summaries, a third preferences, the rest events."""
    draw = rng.random()
    if draw < 0.5:
        return "conversation_summary", summary_text(rng, name)
    if draw < 0.83:
        return "preference", preference_text(rng, name)
    return "event", event_text(rng, name)


def unique_memories(count: int, name: str, seed: int) -> list[tuple[str, str]]:
    """``count`` distinct (type, text) of one subject: identical texts would tie in the search."""
    rng = random.Random(seed)
    seen: dict[str, str] = {}
    for _ in range(count * 200):
        kind, text = memory_text(rng, name)
        seen.setdefault(text, kind)
        if len(seen) == count:
            return [(kind, text) for text, kind in seen.items()]
    raise ValueError(f"the templates give fewer than {count} distinct texts for {name}")


def questions(count: int, seed: int) -> list[str]:
    """``count`` distinct short questions a user asks about their own memories."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    for _ in range(count * 200):
        category, item = rng.choice(ITEMS)
        seen[
            rng.choice(QUESTIONS).format(category=category, item=item, advice=rng.choice(ADVICE), life=rng.choice(LIFE))
        ] = None
        if len(seen) == count:
            return list(seen)
    raise ValueError(f"the templates give fewer than {count} distinct questions")


def sha256_hex(text: str) -> bytes:
    return hashlib.sha256(text.encode()).hexdigest().encode()


# --- Who owns what -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Memories of every subject of the spread scenario. Row ``i`` is SubjectMemory and
    embedding object id ``i + 1``; subject ``j`` is Subject id ``j + 1``. Subjects ``0 ..
    real_subjects - 1`` are the real ones, then the configured groups in order, then the small ones."""

    sizes: np.ndarray  # memories per subject
    owner: np.ndarray  # per row: its subject
    label: np.ndarray  # per row: its cluster, -1 for the real subjects' rows
    topics: list[np.ndarray]  # per subject: its clusters (empty for the real subjects)
    real_subjects: int

    def rows_of(self, subject: int) -> np.ndarray:
        return np.flatnonzero(self.owner == subject)


def topic_count(rows: int, clusters: int) -> int:
    return min(clusters, max(3, math.ceil(rows / 20)))


def subject_sizes(
    rows: int, subjects: int, groups: tuple[tuple[int, int], ...], real_subjects: int, real: int, seed: int
) -> np.ndarray:
    """``real_subjects`` of ``real`` rows, then ``groups`` of (count, rows); the other subjects
    share what is left, at least 1 each."""
    sizes = [real] * real_subjects
    for count, size in groups:
        sizes += [size] * count
    small = subjects - len(sizes)
    left = rows - sum(sizes)
    if small <= 0 or left < small:
        raise ValueError(f"{rows} rows do not fit {subjects} subjects with groups {groups}")
    rng = np.random.default_rng(seed)
    shares = rng.multinomial(left - small, np.full(small, 1 / small)) + 1
    return np.array(sizes + shares.tolist(), dtype=np.int64)


def spread_layout(
    rows: int,
    subjects: int,
    groups: tuple[tuple[int, int], ...],
    real_subjects: int,
    real: int,
    clusters: int,
    seed: int,
) -> Layout:
    """Sizes, topics and rows of every subject, rows in a random (arrival) order."""
    sizes = subject_sizes(rows, subjects, groups, real_subjects, real, seed)
    rng = np.random.default_rng(seed + 1)
    topics = [np.empty(0, dtype=np.int64)] * real_subjects
    labels = [np.full(real * real_subjects, -1, dtype=np.int64)]
    for size in sizes[real_subjects:]:
        mine = rng.choice(clusters, topic_count(int(size), clusters), replace=False)
        topics.append(mine)
        labels.append(rng.choice(mine, int(size)))
    owner = np.repeat(np.arange(len(sizes)), sizes)
    label = np.concatenate(labels)
    order = rng.permutation(rows)
    return Layout(sizes=sizes, owner=owner[order], label=label[order], topics=topics, real_subjects=real_subjects)


def vectors_of(labels: np.ndarray, spec: ClusterSpec, seed: int) -> np.ndarray:
    """Unit vectors of the given clusters, drawn as ``bench.vectors.clustered_vectors`` draws
    them (same centres and directions for the same ``spec``), the cluster of each row given."""
    centres, bases = _clusters(spec, DIMENSION)
    rng = np.random.default_rng(seed)
    out = centres[labels]
    out += rng.standard_normal((len(labels), DIMENSION), dtype=np.float32) * np.float32(
        spec.spread / np.sqrt(DIMENSION)
    )
    sigma = np.float32(spec.along / np.sqrt(spec.rank))
    for cluster in np.unique(labels):
        rows = np.flatnonzero(labels == cluster)
        out[rows] += (rng.standard_normal((len(rows), spec.rank), dtype=np.float32) * sigma) @ bases[cluster]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


# --- Exact neighbours and recall, per subject ----------------------------------------------------


def subject_truth(vectors: np.ndarray, rows: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-``k`` (fewer when the subject has fewer rows) among ``rows``: (row indexes,
    similarities), best first."""
    sims = vectors[rows] @ query
    top = np.argsort(-sims, kind="stable")[:k]
    return rows[top], sims[top]


def hits(
    found: list[int], truth_rows: np.ndarray, truth_sims: np.ndarray, vectors: np.ndarray, query: np.ndarray
) -> int:
    """How many of the exact top-k (k = len(truth_rows)) an answer holds; a row outside it still
    counts when its similarity ties the k-th (``bench.vectors.TIE_TOLERANCE``)."""
    k = len(truth_rows)
    exact = set(truth_rows.tolist())
    kth = float(truth_sims[-1])
    return min(k, sum(1 for row in found[:k] if row in exact or float(vectors[row] @ query) >= kth - TIE_TOLERANCE))


# --- PostgreSQL binary COPY of memory_embedding, with the subject --------------------------------

EMBEDDING_COPY_COLUMNS = "kind, object_id, model, dimension, embedding, text_sha256, active, created_at, subject_id"


def embedding_copy_chunks(
    model: str,
    object_ids: np.ndarray,
    subject_ids: np.ndarray,
    vectors: np.ndarray,
    shas: list[bytes],
    created: datetime,
    chunk: int = 20_000,
) -> Iterator[bytes]:
    """The binary COPY stream of kind "subject" rows: ``bench.vectors``' tuple layout plus the
    subject_id column, built with numpy."""
    base = _embedding_dtype("subject", model, DIMENSION)
    dtype = np.dtype([*base.descr, ("subject_len", ">i4"), ("subject_id", ">i8")])
    micros = int((created - PG_EPOCH).total_seconds() * 1_000_000)
    yield COPY_HEADER
    for start in range(0, len(object_ids), chunk):
        stop = min(start + chunk, len(object_ids))
        rows = np.zeros(stop - start, dtype=dtype)
        rows["nfields"] = 9
        rows["kind_len"], rows["kind"] = len("subject"), b"subject"
        rows["object_id_len"], rows["object_id"] = 8, object_ids[start:stop]
        rows["model_len"], rows["model"] = len(model), model.encode()
        rows["dimension_len"], rows["dimension"] = 4, DIMENSION
        rows["vector_len"], rows["vector_dim"], rows["vector"] = 4 + 4 * DIMENSION, DIMENSION, vectors[start:stop]
        rows["sha_len"], rows["sha"] = 64, shas[start:stop]
        rows["active_len"], rows["active"] = 1, 1
        rows["created_len"], rows["created"] = 8, micros
        rows["subject_len"], rows["subject_id"] = 8, subject_ids[start:stop]
        yield rows.tobytes()
    yield COPY_TRAILER


# --- A history of 10 000 messages as the five seed-002 documents ---------------------------------

EMOTIONS = ("neutre", "joyeux", "pensif", "triste", "surpris", "excité", "frustré", "empathique", "énervé")
TRAITS = ("extraversion", "empathie", "humour", "formalité", "curiosité", "enthousiasme", "patience")


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def history_documents(
    messages: int,
    vectors: np.ndarray,
    model: str,
    seed: int,
    name: str = "Alice",
    start: datetime = datetime(2024, 1, 1, 9, tzinfo=UTC),
) -> dict[str, Any]:
    """The five documents of a subject after ``messages`` messages, as the seed's assistant would
    have saved them: conversations of 6 to 14 messages (~10), a preference every 3 conversations, an
    event every 7, a relationship every 6, one embedding per summary, preference and event (the
    vectors taken in turn from ``vectors``), a trait snapshot every 50 interactions (one user
    message is one interaction) and the last 100 emotions of 2 per conversation."""
    rng = random.Random(seed)
    counts: list[int] = []
    while sum(counts) < messages:
        counts.append(min(rng.randint(6, 14), messages - sum(counts)))
    moment, per_day, day = start, 0, start.date()
    conversations, preferences, events, relationships, memories = [], [], [], [], []
    for n, count in enumerate(counts):
        moment += timedelta(hours=rng.randint(4, 20), minutes=rng.randint(0, 59))
        per_day = per_day + 1 if moment.date() == day else 1
        day = moment.date()
        conv_id = f"conv_{moment:%Y%m%d}_{per_day:03d}"
        end = moment + timedelta(minutes=2 * count + rng.randint(0, 20))
        category, item = rng.choice(ITEMS)
        score = round(rng.uniform(-1, 1), 2)
        sentiment = "positive" if score > 0.3 else "negative" if score < -0.3 else rng.choice(("neutral", "mixed"))
        first = sum(counts[:n]) + 1
        summary = summary_text(rng, name)
        conversations.append(
            {
                "id": conv_id,
                "start_timestamp": stamp(moment),
                "end_timestamp": stamp(end),
                "message_count": count,
                "summary": summary,
                "key_points": [f"Intérêt : {item}", f"Sujet : {category}"],
                "topics": [category, item],
                "overall_sentiment": sentiment,
                "sentiment_score": score,
                "dominant_emotion": rng.choice(EMOTIONS),
                "message_ids": list(range(first, first + count)),
            }
        )
        memories.append(("conversation_summary", conv_id, summary, end))
        if n % 3 == 0:
            pref_id = f"pref_{len(preferences) + 1:03d}"
            quote = rng.choice(QUOTES).format(item=item)
            good = rng.choice(SENTIMENTS[:2])
            preferences.append(
                {
                    "id": pref_id,
                    "category": category,
                    "item": item,
                    "sentiment": good,
                    "confidence": round(rng.uniform(0.6, 1.0), 2),
                    "extracted_from": conv_id,
                    "timestamp": stamp(moment + timedelta(minutes=5)),
                    "context": f"{name} a dit '{quote}'",
                }
            )
            memories.append(("preference", pref_id, f"{category}: {item} ({good}). {name} a dit '{quote}'", moment))
        if n % 7 == 0:
            event_id = f"event_{len(events) + 1:03d}"
            description = event_text(rng, name)
            events.append(
                {
                    "id": event_id,
                    "description": description,
                    "timestamp": stamp(moment),
                    "importance": round(rng.uniform(0.2, 1.0), 2),
                    "sentiment": rng.choice(SENTIMENTS[:3]),
                    "extracted_from": conv_id,
                    "related_topics": [category],
                }
            )
            memories.append(("event", event_id, description, moment))
        if n % 6 == 0:
            relationships.append(
                {
                    "id": f"rel_{len(relationships) + 1:03d}",
                    "entity_1": name,
                    "relation_type": rng.choice(("aime", "déteste", "veut_apprendre", "connaît")),
                    "entity_2": item,
                    "confidence": round(rng.uniform(0.6, 1.0), 2),
                    "extracted_from": conv_id,
                }
            )
    if len(memories) > len(vectors):
        raise ValueError(f"{len(memories)} memories need as many vectors, {len(vectors)} given")
    embeddings = [
        {"id": key, "type": kind, "text": text, "embedding": [float(x) for x in vectors[i]], "timestamp": stamp(at)}
        for i, (kind, key, text, at) in enumerate(memories)
    ]
    last = stamp(moment)
    return {
        "conversations": {
            "version": "1.0",
            "last_updated": last,
            "conversations": conversations,
            "total_conversations": len(conversations),
            "total_messages": messages,
        },
        "facts": {
            "version": "1.0",
            "last_updated": last,
            "user_profile": {
                "name": name,
                "name_confidence": 1.0,
                "name_extracted_from": conversations[0]["id"],
                "name_timestamp": conversations[0]["start_timestamp"],
            },
            "preferences": preferences,
            "events": events,
            "relationships": relationships,
            "total_preferences": len(preferences),
            "total_events": len(events),
            "total_relationships": len(relationships),
        },
        "embeddings": {
            "version": "1.0",
            "model": model,
            "embedding_dim": DIMENSION,
            "last_updated": last,
            "embeddings": embeddings,
            "total_embeddings": len(embeddings),
        },
        "personality": personality_document(rng, messages // 2, start, moment),
        "emotion_history": emotion_document(rng, conversations, last),
    }


def personality_document(rng: random.Random, interactions: int, start: datetime, end: datetime) -> dict[str, Any]:
    """A snapshot every 50 interactions, traits drifting by small deltas (the seed's "changes")."""
    traits = dict.fromkeys(TRAITS, 0.5)
    history: list[dict[str, Any]] = [
        {"timestamp": stamp(start), "traits": dict(traits), "reason": "Initial default values"}
    ]
    updates = interactions // 50
    for n in range(1, updates + 1):
        changes = {}
        for trait in TRAITS:
            delta = round(rng.uniform(-0.03, 0.03), 2)
            traits[trait] = round(min(1.0, max(0.0, traits[trait] + delta)), 2)
            changes[trait] = f"{delta:+.2f}"
        at = start + (end - start) * n / updates
        history.append(
            {
                "timestamp": stamp(at),
                "traits": dict(traits),
                "changes": changes,
                "reason": f"Updated after {n * 50} interactions",
                "interactions_count": 50,
            }
        )
    return {
        "version": "1.0",
        "last_updated": stamp(end),
        "current_traits": traits,
        "trait_history": history,
        "total_interactions": interactions,
        "last_trait_update": history[-1]["timestamp"],
        "update_frequency": 50,
    }


def emotion_document(rng: random.Random, conversations: list[dict[str, Any]], last: str) -> dict[str, Any]:
    """Two emotions per conversation; the last 100 kept, transitions and statistics of all of them."""
    recorded, transitions = [], {}
    previous = None
    for conversation in conversations:
        for at in (conversation["start_timestamp"], conversation["end_timestamp"]):
            emotion = rng.choice(EMOTIONS)
            recorded.append(
                {
                    "timestamp": at,
                    "emotion": emotion,
                    "intensity": round(rng.uniform(0.3, 0.9), 2),
                    "context": conversation["summary"][:80],
                    "triggered_by": "user_message",
                }
            )
            if previous and previous != emotion:
                transitions[(previous, emotion)] = transitions.get((previous, emotion), 0) + 1
            previous = emotion
    frequency: dict[str, int] = {}
    for entry in recorded:
        frequency[entry["emotion"]] = frequency.get(entry["emotion"], 0) + 1
    frequent = max(frequency.items(), key=lambda item: item[1])
    return {
        "version": "1.0",
        "last_updated": last,
        "max_history": 100,
        "current_emotion": recorded[-1]["emotion"],
        "current_intensity": recorded[-1]["intensity"],
        "history": recorded[-100:],
        "transitions": [
            {"from": a, "to": b, "count": c, "avg_duration_seconds": rng.randint(60, 3600)}
            for (a, b), c in transitions.items()
        ],
        "statistics": {
            "total_emotions_recorded": len(recorded),
            "most_frequent_emotion": frequent[0],
            "most_frequent_emotion_count": frequent[1],
            "avg_intensity_overall": round(sum(e["intensity"] for e in recorded) / len(recorded), 4),
            "total_transitions": sum(transitions.values()),
        },
    }
