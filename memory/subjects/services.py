"""A subject's conversational memory (seed 002): importing and exporting its five documents,
adding facts with per-subject ids, correcting them, and erasing the subject.

Imports replace, per document given, what the subject had: importing the same documents again
changes nothing, and an export gives back what was imported. Every write is one transaction; an
invalid document writes nothing.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import Model
from pydantic import ValidationError

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import search
from memory.indexing import schedule_embedding
from memory.models import (
    Conversation,
    Embedding,
    EmotionEvent,
    EmotionState,
    EmotionTransition,
    LifeEvent,
    PersonalityState,
    Preference,
    ProfileFact,
    Relationship,
    Subject,
    SubjectCounter,
    SubjectMemory,
    TraitSnapshot,
)
from memory.subjects import documents as docs
from memory.subjects import emotions
from memory.subjects.access import READ, WRITE, subject_for

SUBJECT_KEY = re.compile(r"[-a-zA-Z0-9_]{1,100}")  # what Subject.key, a slug, allows

FACT_KINDS = {
    "preference": (Preference, "pref_id", "pref"),
    "event": (LifeEvent, "event_id", "event"),
    "relationship": (Relationship, "rel_id", "rel"),
}


class _FactActions(NamedTuple):
    """The audit actions of one kind of fact."""

    added: AuditAction
    edited: AuditAction
    deleted: AuditAction


_FACT_ACTIONS = {
    "preference": _FactActions(
        AuditAction.SUBJECT_PREFERENCE_ADDED,
        AuditAction.SUBJECT_PREFERENCE_EDITED,
        AuditAction.SUBJECT_PREFERENCE_DELETED,
    ),
    "event": _FactActions(
        AuditAction.SUBJECT_EVENT_ADDED, AuditAction.SUBJECT_EVENT_EDITED, AuditAction.SUBJECT_EVENT_DELETED
    ),
    "relationship": _FactActions(
        AuditAction.SUBJECT_RELATIONSHIP_ADDED,
        AuditAction.SUBJECT_RELATIONSHIP_EDITED,
        AuditAction.SUBJECT_RELATIONSHIP_DELETED,
    ),
}


def get(key: str) -> Subject:
    subject = Subject.objects.filter(key=key).first()
    if subject is None:
        raise NotFound(f"No subject {key!r}.")
    return subject


def _invalid(exc: docs.DocumentErrors, prefix: list[Any]) -> InvalidInput:
    errors = [{**e, "loc": [*prefix, *e["loc"]]} for e in exc.errors]
    return InvalidInput("The documents are invalid; nothing was imported.", errors)


# --- Ids -----------------------------------------------------------------------------------------


def next_id(subject: Subject, prefix: str) -> str:
    """``pref_004``: the subject's counter for the prefix, incremented in the caller's
    transaction by one UPDATE ... RETURNING (the row lock orders concurrent writers)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {SubjectCounter._meta.db_table} (subject_id, prefix, last) VALUES (%s, %s, 1) "
            f"ON CONFLICT (subject_id, prefix) DO UPDATE SET last = {SubjectCounter._meta.db_table}.last + 1 "
            "RETURNING last",
            [subject.pk, prefix],
        )
        (number,) = cursor.fetchone()
    return f"{prefix}_{number:03d}"


def _raise_counters(subject: Subject, prefix: str, ids: Iterable[str]) -> None:
    """After an import: the next generated id follows the highest imported one."""
    numbers = [int(i.rsplit("_", 1)[1]) for i in ids]
    SubjectCounter.objects.update_or_create(subject=subject, prefix=prefix, defaults={"last": max(numbers, default=0)})


def _vector_space() -> tuple[str, int]:
    """The configured backend's model and dimension (building a backend loads nothing)."""
    from memory.embeddings import get_backend

    backend = get_backend()
    return backend.model, backend.dimension


# --- Import --------------------------------------------------------------------------------------


def import_documents(key: str, documents: dict[str, Any], *, actor: Principal, loc: list[Any] | None = None) -> dict:
    """Import the given seed-002 documents into the subject ``key`` (created if new). Returns the
    counts written per document."""
    if not SUBJECT_KEY.fullmatch(key):
        error = {"loc": ["path", "subject"], "msg": "1-100 letters, digits, - or _", "type": "pattern"}
        raise InvalidInput(f"{key!r} is not a subject key.", [error])
    try:
        parsed = docs.parse({name: documents.get(name) for name in docs.DOCUMENTS})
    except docs.DocumentErrors as exc:
        raise _invalid(exc, loc or []) from exc
    counts: dict[str, int] = {}
    # Not durable: load_demo runs each app's demo, which calls this, in one transaction.
    with transaction.atomic():
        subject, _ = Subject.objects.select_for_update().get_or_create(key=key)
        meta = dict(subject.documents)
        for name, document in parsed.items():
            counts[name] = _IMPORTERS[name](subject, document)
            meta[name] = {"last_updated": docs.stamp(document.last_updated)}
            if name == "embeddings":
                meta[name] |= {"model": document.model, "embedding_dim": document.embedding_dim}
        subject.documents = meta
        subject.save(update_fields=["documents"])
        record(actor=actor, action=AuditAction.SUBJECT_IMPORTED, target=subject, documents=sorted(parsed))
    return counts


def _import_conversations(subject: Subject, doc: docs.ConversationsDoc) -> int:
    Conversation.objects.filter(subject=subject).delete()
    Conversation.objects.bulk_create(
        Conversation(
            subject=subject,
            conv_id=c.id,
            start_timestamp=c.start_timestamp,
            end_timestamp=c.end_timestamp,
            message_count=c.message_count,
            summary=c.summary,
            key_points=c.key_points,
            topics=c.topics,
            overall_sentiment=c.overall_sentiment,
            sentiment_score=c.sentiment_score,
            dominant_emotion=c.dominant_emotion,
            message_ids=c.message_ids,
        )
        for c in doc.conversations
    )
    return len(doc.conversations)


def _import_facts(subject: Subject, doc: docs.FactsDoc) -> int:
    ProfileFact.objects.filter(subject=subject).delete()
    if doc.user_profile is not None:
        p = doc.user_profile
        ProfileFact.objects.create(
            subject=subject,
            field="name",
            value=p.name,
            confidence=p.name_confidence,
            extracted_from=p.name_extracted_from,
            timestamp=p.name_timestamp,
        )
    for model in (Preference, LifeEvent, Relationship):
        model.objects.filter(subject=subject).delete()
    Preference.objects.bulk_create(
        Preference(
            subject=subject,
            pref_id=f.id,
            category=f.category,
            item=f.item,
            sentiment=f.sentiment,
            confidence=f.confidence,
            extracted_from=f.extracted_from,
            timestamp=f.timestamp,
            context=f.context,
        )
        for f in doc.preferences
    )
    LifeEvent.objects.bulk_create(
        LifeEvent(
            subject=subject,
            event_id=e.id,
            description=e.description,
            timestamp=e.timestamp,
            importance=e.importance,
            sentiment=e.sentiment,
            extracted_from=e.extracted_from,
            related_topics=e.related_topics,
        )
        for e in doc.events
    )
    Relationship.objects.bulk_create(
        Relationship(
            subject=subject,
            rel_id=r.id,
            entity_1=r.entity_1,
            relation_type=r.relation_type,
            entity_2=r.entity_2,
            confidence=r.confidence,
            extracted_from=r.extracted_from,
        )
        for r in doc.relationships
    )
    _raise_counters(subject, "pref", (f.id for f in doc.preferences))
    _raise_counters(subject, "event", (e.id for e in doc.events))
    _raise_counters(subject, "rel", (r.id for r in doc.relationships))
    return (doc.user_profile is not None) + len(doc.preferences) + len(doc.events) + len(doc.relationships)


def _import_embeddings(subject: Subject, doc: docs.EmbeddingsDoc) -> int:
    """Entries keep the vectors they come with when the model and dimension are those of the
    configured backend; the others are embedded by the worker like any new memory."""
    SubjectMemory.objects.filter(subject=subject).delete()  # their vectors go with them (see erase)
    Embedding.objects.filter(kind="subject", subject=subject).delete()
    rows = SubjectMemory.objects.bulk_create(
        SubjectMemory(subject=subject, key=e.id, type=e.type, text=e.text, timestamp=e.timestamp)
        for e in doc.embeddings
    )
    model, dimension = _vector_space()
    keep = doc.model == model and doc.embedding_dim == dimension
    vectors = []
    later = []
    for row, entry in zip(rows, doc.embeddings, strict=True):
        if keep and entry.embedding is not None:
            digest = hashlib.sha256(entry.text.encode("utf-8")).hexdigest()
            vectors.append(
                Embedding(
                    kind="subject",
                    object_id=row.pk,
                    model=model,
                    dimension=dimension,
                    embedding=entry.embedding,
                    text_sha256=digest,
                    subject=subject,
                )
            )
        else:
            later.append(row.pk)
    Embedding.objects.bulk_create(vectors)
    schedule_embedding("subject", later)
    return len(rows)


def _import_personality(subject: Subject, doc: docs.PersonalityDoc) -> int:
    PersonalityState.objects.update_or_create(
        subject=subject,
        defaults={
            "traits": doc.current_traits,
            "total_interactions": doc.total_interactions,
            "interactions_since_update": 0,
            "pending_changes": {},
            "last_trait_update": doc.last_trait_update,
            "update_frequency": doc.update_frequency,
            "last_updated": doc.last_updated,
        },
    )
    TraitSnapshot.objects.filter(subject=subject).delete()
    TraitSnapshot.objects.bulk_create(
        TraitSnapshot(
            subject=subject,
            timestamp=t.timestamp,
            traits=t.traits,
            reason=t.reason,
            interactions_count=t.interactions_count,
            changes=t.changes,
        )
        for t in doc.trait_history
    )
    return 1 + len(doc.trait_history)


def _import_emotions(subject: Subject, doc: docs.EmotionHistoryDoc) -> int:
    stats = doc.statistics
    counts = {}
    if stats is not None and stats.most_frequent_emotion:
        counts = {stats.most_frequent_emotion: stats.most_frequent_emotion_count}
    total = stats.total_emotions_recorded if stats else len(doc.history)
    EmotionState.objects.update_or_create(
        subject=subject,
        defaults={
            "current_emotion": doc.current_emotion or "",
            "current_intensity": doc.current_intensity,
            "current_since": doc.history[-1].timestamp if doc.history else None,
            "max_history": doc.max_history,
            "total_emotions_recorded": total,
            "total_transitions": stats.total_transitions if stats else 0,
            "intensity_sum": (stats.avg_intensity_overall * total) if stats else sum(h.intensity for h in doc.history),
            "counts": counts,
            "last_updated": doc.last_updated,
        },
    )
    EmotionEvent.objects.filter(subject=subject).delete()
    EmotionEvent.objects.bulk_create(
        EmotionEvent(
            subject=subject,
            timestamp=h.timestamp,
            emotion=h.emotion,
            intensity=h.intensity,
            context=h.context,
            triggered_by=h.triggered_by,
        )
        for h in doc.history[-doc.max_history :]
    )
    EmotionTransition.objects.filter(subject=subject).delete()
    EmotionTransition.objects.bulk_create(
        EmotionTransition(
            subject=subject,
            from_emotion=t.from_,
            to_emotion=t.to,
            count=t.count,
            avg_duration_seconds=t.avg_duration_seconds,
        )
        for t in doc.transitions
    )
    return len(doc.history) + len(doc.transitions)


_IMPORTERS = {
    "conversations": _import_conversations,
    "facts": _import_facts,
    "embeddings": _import_embeddings,
    "personality": _import_personality,
    "emotion_history": _import_emotions,
}


# --- Export --------------------------------------------------------------------------------------


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 6)


def export(subject: Subject) -> dict[str, Any]:
    """The five documents, version 1.0, in the seed's shapes, lists in the order they were
    written: what was imported comes back equal. Vector components come back as PostgreSQL stores
    them (float4, shortest decimal form)."""
    meta = subject.documents
    stamp = docs.stamp

    def updated(name: str) -> str | None:
        return meta.get(name, {}).get("last_updated") or stamp(docs.now())

    conversations = [
        {
            "id": c.conv_id,
            "start_timestamp": stamp(c.start_timestamp),
            "end_timestamp": stamp(c.end_timestamp),
            "message_count": c.message_count,
            "summary": c.summary,
            "key_points": c.key_points,
            "topics": c.topics,
            "overall_sentiment": c.overall_sentiment,
            "sentiment_score": c.sentiment_score,
            "dominant_emotion": c.dominant_emotion,
            "message_ids": c.message_ids,
        }
        for c in subject.conversations.order_by("pk")
    ]
    name = subject.profile.filter(field="name").first()
    preferences = [
        {
            "id": p.pref_id,
            "category": p.category,
            "item": p.item,
            "sentiment": p.sentiment,
            "confidence": p.confidence,
            "extracted_from": p.extracted_from,
            "timestamp": stamp(p.timestamp),
            "context": p.context,
        }
        for p in subject.preferences.order_by("pk")
    ]
    events = [
        {
            "id": e.event_id,
            "description": e.description,
            "timestamp": stamp(e.timestamp),
            "importance": e.importance,
            "sentiment": e.sentiment,
            "extracted_from": e.extracted_from,
            "related_topics": e.related_topics,
        }
        for e in subject.events.order_by("pk")
    ]
    relationships = [
        {
            "id": r.rel_id,
            "entity_1": r.entity_1,
            "relation_type": r.relation_type,
            "entity_2": r.entity_2,
            "confidence": r.confidence,
            "extracted_from": r.extracted_from,
        }
        for r in subject.relationships.order_by("pk")
    ]
    facts: dict[str, Any] = {"version": docs.CURRENT_VERSION, "last_updated": updated("facts")}
    if name is not None:
        facts["user_profile"] = {
            "name": name.value,
            "name_confidence": name.confidence,
            "name_extracted_from": name.extracted_from,
            "name_timestamp": stamp(name.timestamp),
        }
    facts |= {
        "preferences": preferences,
        "events": events,
        "relationships": relationships,
        "total_preferences": len(preferences),
        "total_events": len(events),
        "total_relationships": len(relationships),
    }
    model, dimension = _vector_space()
    vectors = dict(
        Embedding.objects.filter(kind="subject", subject=subject, model=model).values_list("object_id", "embedding")
    )
    embeddings = [
        {
            "id": m.key,
            "type": m.type,
            "text": m.text,
            "embedding": list(vectors[m.pk]) if m.pk in vectors else None,
            "timestamp": stamp(m.timestamp),
        }
        for m in subject.memories.order_by("pk")
    ]
    return {
        "conversations": {
            "version": docs.CURRENT_VERSION,
            "last_updated": updated("conversations"),
            "conversations": conversations,
            "total_conversations": len(conversations),
            "total_messages": sum(c["message_count"] for c in conversations),
        },
        "facts": facts,
        "embeddings": {
            "version": docs.CURRENT_VERSION,
            "model": model,
            "embedding_dim": dimension,
            "last_updated": updated("embeddings"),
            "embeddings": embeddings,
            "total_embeddings": len(embeddings),
        },
        "personality": _export_personality(subject, updated("personality")),
        "emotion_history": _export_emotions(subject, updated("emotion_history")),
    }


def _export_personality(subject: Subject, last_updated: str | None) -> dict[str, Any] | None:
    state = PersonalityState.objects.filter(subject=subject).first()
    if state is None:
        return None
    history = []
    for t in subject.trait_history.order_by("timestamp", "pk"):
        item: dict[str, Any] = {"timestamp": docs.stamp(t.timestamp), "traits": t.traits, "reason": t.reason}
        if t.interactions_count is not None:
            item["interactions_count"] = t.interactions_count
        if t.changes is not None:
            item["changes"] = t.changes
        history.append(item)
    return {
        "version": docs.CURRENT_VERSION,
        "last_updated": docs.stamp(state.last_updated) or last_updated,
        "current_traits": state.traits,
        "trait_history": history,
        "total_interactions": state.total_interactions,
        "last_trait_update": docs.stamp(state.last_trait_update),
        "update_frequency": state.update_frequency,
    }


def _export_emotions(subject: Subject, last_updated: str | None) -> dict[str, Any] | None:
    state = EmotionState.objects.filter(subject=subject).first()
    if state is None:
        return None
    history = [
        {
            "timestamp": docs.stamp(h.timestamp),
            "emotion": h.emotion,
            "intensity": h.intensity,
            "context": h.context,
            "triggered_by": h.triggered_by,
        }
        for h in subject.emotion_history.all()
    ]
    transitions = [
        {
            "from": t.from_emotion,
            "to": t.to_emotion,
            "count": t.count,
            "avg_duration_seconds": _number(t.avg_duration_seconds),
        }
        for t in subject.transitions.order_by("id")
    ]
    frequent = max(state.counts.items(), key=lambda item: (item[1], item[0]), default=(None, 0))
    total = state.total_emotions_recorded
    return {
        "version": docs.CURRENT_VERSION,
        "last_updated": docs.stamp(state.last_updated) or last_updated,
        "max_history": state.max_history,
        "current_emotion": state.current_emotion or None,
        "current_intensity": state.current_intensity,
        "history": history,
        "transitions": transitions,
        "statistics": {
            "total_emotions_recorded": total,
            "most_frequent_emotion": frequent[0],
            "most_frequent_emotion_count": frequent[1],
            "avg_intensity_overall": round(state.intensity_sum / total, 4) if total else 0.0,
            "total_transitions": state.total_transitions,
        },
    }


# --- Facts ---------------------------------------------------------------------------------------


def add_fact(subject: Subject, kind: str, values: dict[str, Any], *, actor: Principal) -> Model:
    """A new preference, event or relationship with the subject's next id, and its memory text
    (embedded by the worker) so that search finds it."""
    model, id_field, prefix = FACT_KINDS[kind]
    with transaction.atomic(durable=True):
        fact = model.objects.create(subject=subject, **{id_field: next_id(subject, prefix)}, **values)
        text = _fact_text(kind, fact)
        at = getattr(fact, "timestamp", None) or docs.now()
        memory = SubjectMemory.objects.create(
            subject=subject, key=getattr(fact, id_field), type=kind, text=text, timestamp=at
        )
        schedule_embedding("subject", [memory.pk])
        record(actor=actor, action=_FACT_ACTIONS[kind].added, target=subject, fact=getattr(fact, id_field))
    return fact


_FACT_SCHEMAS = {"preference": docs.PreferenceIn, "event": docs.EventIn, "relationship": docs.RelationshipIn}


def add_fact_checked(subject: Subject, kind: str, values: dict[str, Any], *, actor: Principal) -> str:
    """``add_fact`` for untrusted input: the seed's schema of that fact (without its id, which is
    ours to give), 422 with paths; returns the new id."""
    prefix = FACT_KINDS[kind][2]
    if kind in ("preference", "event"):
        values = {"timestamp": docs.now(), **values}
    try:
        parsed = _FACT_SCHEMAS[kind].model_validate({**values, "id": f"{prefix}_000"})
    except ValidationError as exc:
        errors = [{"loc": ["body", "values", *e["loc"]], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        raise InvalidInput(f"The {kind} is invalid.", errors) from exc
    fact = add_fact(subject, kind, parsed.model_dump(exclude={"id"}), actor=actor)
    return getattr(fact, FACT_KINDS[kind][1])


def _fact_text(kind: str, fact: Any) -> str:
    if kind == "preference":
        return f"{fact.category}: {fact.item} ({fact.sentiment}). {fact.context}".strip()
    if kind == "event":
        return fact.description
    return f"{fact.entity_1} {fact.relation_type} {fact.entity_2}"


def correct_fact(subject: Subject, kind: str, fact_id: str, values: dict[str, Any] | None, *, actor: Principal) -> None:
    """An operator fixes (``values``) or deletes (``None``) a wrong fact; the audit trail says who
    and when, and which fact, but not the personal data itself."""
    model, id_field, _ = FACT_KINDS[kind]
    with transaction.atomic(durable=True):
        fact = model.objects.select_for_update().filter(subject=subject, **{id_field: fact_id}).first()
        if fact is None:
            raise NotFound(f"No {kind} {fact_id} for this subject.")
        memory = SubjectMemory.objects.filter(subject=subject, key=fact_id)
        if values is None:
            fact.delete()
            Embedding.objects.filter(kind="subject", object_id__in=memory.values("pk")).delete()
            memory.delete()
            record(actor=actor, action=_FACT_ACTIONS[kind].deleted, target=subject, fact=fact_id)
            return
        for name, value in values.items():
            setattr(fact, name, value)
        fact.full_clean(exclude=["subject"])
        fact.save()
        memory.update(text=_fact_text(kind, fact))
        schedule_embedding("subject", memory.values_list("pk", flat=True))
        record(actor=actor, action=_FACT_ACTIONS[kind].edited, target=subject, fact=fact_id, fields=sorted(values))


# --- Erasure -------------------------------------------------------------------------------------


def erase(subject: Subject, *, actor: Principal) -> str:
    """Erase everything stored about the subject: every row of every table, its vectors, and the
    audit rows that named it. What remains is one audit row saying that an erasure happened, by
    whom and when, with a random erasure id; returns that id.

    Nothing derived from the key is kept. A hash of a key such as ``alice`` is reversed by hashing
    guesses, and an HMAC with the server's secret only moves that to whoever holds the secret
    (every host, every backup of var/secret_key) while linking the erasures of one person. A
    random id names the erasure (for the operator's records and the person's request) and says
    nothing about whom it was."""
    from governance.kernel.models import AuditEvent

    erasure_id = uuid.uuid4().hex
    with transaction.atomic(durable=True):
        locked = Subject.objects.select_for_update().get(pk=subject.pk)
        Embedding.objects.filter(subject=locked).delete()
        AuditEvent.objects.filter(target_type=Subject._meta.label_lower, target_id=str(locked.pk)).delete()
        locked.delete()  # every other table cascades from the subject
        AuditEvent.objects.create(
            actor=actor.label,
            action=AuditAction.SUBJECT_ERASED,
            target_type=Subject._meta.label_lower,
            target_id="",
            data={"erasure_id": erasure_id},
        )
    return erasure_id


def search_subject(principal: Principal, subject: str, *, q: str, k: int = 5) -> list[dict[str, Any]]:
    """The subject's memories nearest to ``q``, cosine similarity as ``score`` (REST and MCP);
    ``Unavailable`` (503) when the embedding backend cannot embed ``q``."""
    found = subject_for(principal, subject, access=READ, purpose="search")
    vector, backend = search.embed_query(q)
    hits = SubjectMemory.objects.nearest(
        vector, model=backend.model, dimension=backend.dimension, subject_id=found.pk, k=k
    )
    rows = SubjectMemory.objects.in_bulk([h.object_id for h in hits])
    return [
        {
            "id": rows[h.object_id].key,
            "type": rows[h.object_id].type,
            "text": rows[h.object_id].text,
            "score": h.similarity,
        }
        for h in hits
    ]


def record_emotion(principal: Principal, subject: str, **fields: Any) -> dict[str, Any]:
    """An emotion of the subject, as the calling agent observed it (REST and MCP); 422 naming from,
    to and probability when the move from the current emotion is unrealistic."""
    event = emotions.record(subject_for(principal, subject, access=WRITE, purpose="emotion"), actor=principal, **fields)
    return {"emotion": event.emotion, "intensity": event.intensity, "timestamp": event.timestamp}
