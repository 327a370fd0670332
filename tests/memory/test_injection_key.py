"""Each injection carries its learning's key (story, gate, tags_hash), which reuse scoring counts by.
The database writes it (trigger, migration 0016): every writer records the right key, the previous
release's inserts included, and no writer can record another one."""

from __future__ import annotations

import importlib
import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from governance.kernel.principals import SYSTEM
from memory import indexing, transfer
from memory.embeddings import HashingBackend
from memory.injection import build_block
from memory.models import Learning, LearningInjection
from tests.factories.memory import LearningFactory, LearningInjectionFactory
from tests.support.migrations import back_at, migrate

pytestmark = pytest.mark.django_db

AT = timezone.now() - timedelta(days=1)


def keys() -> set[tuple[int, str, int, str]]:
    """(learning, key) of every injection: one learning's injections all carry the same key."""
    return set(
        LearningInjection.objects.values_list("learning_id", "learning_story", "learning_gate", "learning_tags_hash")
    )


def key(item: Learning) -> tuple[int, str, int, str]:
    return (item.pk, item.story, item.gate, item.tags_hash)


def test_every_writer_records_the_learnings_key():
    made = LearningFactory.create(story="PD-1", gate=3, tags=["#api"], text="retry the flaky deploy")
    bulk = LearningFactory.create(story="PD-2", gate=5, tags=["#ci"], text="pin the runner image")
    raw = LearningFactory.create(story="PD-3", gate=8, tags=["#db"], text="vacuum before the load")
    LearningInjectionFactory.create(learning=made, story="PD-9", domain="tooling", at=AT)
    LearningInjection.objects.bulk_create(
        [LearningInjection(learning=bulk, story="PD-9", domain="tooling", project="p", at=AT)]
    )
    with connection.cursor() as cursor:  # what the previous release sends: no key columns at all
        cursor.execute(
            "INSERT INTO memory_learninginjection (learning_id, story, domain, project, at)"
            " VALUES (%s, 'PD-9', 'tooling', 'p', now())",
            [raw.pk],
        )

    assert keys() == {key(made), key(bulk), key(raw)}


def test_the_block_and_an_import_record_the_key():
    served = LearningFactory.create(story="PD-4", gate=2, tags=["#deploy"], text="retry the flaky deploy")
    indexing.embed("learning", [served.pk], backend=HashingBackend(dimension=64))
    build_block(
        actor=SYSTEM,
        story="PD-9",
        domain="tooling",
        project="gov",
        query_text="retry the flaky deploy",
        backend=HashingBackend(dimension=64),
    )
    imported = LearningFactory.create(story="PD-5", gate=6, tags=["#rag"], text="chunk by heading")
    line = {
        "story": "PD-5",
        "gate": 6,
        "tags": ["#rag"],
        "text": "chunk by heading",
        "injected_into": "PD-10",
        "domain": "rag",
        "project": "p",
        "injected_at": AT.isoformat(),
    }
    report = transfer.import_injections([json.dumps(line)], source="injections.jsonl", actor=SYSTEM)

    assert (report.created, report.rejected) == (1, [])
    assert keys() == {key(served), key(imported)}


def test_a_writer_cannot_record_another_key():
    item = LearningFactory.create(story="PD-1", gate=3, tags=["#api"])
    other = LearningFactory.create(story="PD-2", gate=4, tags=["#ci"])
    forged = LearningInjection.objects.create(
        learning=item,
        story="PD-9",
        domain="tooling",
        project="p",
        at=AT,
        learning_story=other.story,
        learning_gate=other.gate,
        learning_tags_hash=other.tags_hash,
    )
    assert keys() == {key(item)}

    LearningInjection.objects.filter(pk=forged.pk).update(learning_story="PD-2", learning_tags_hash=other.tags_hash)
    assert keys() == {key(item)}

    LearningInjection.objects.filter(pk=forged.pk).update(learning=other)  # moved: the key follows
    assert keys() == {key(other)}


def test_an_injection_of_a_learning_that_does_not_exist_is_refused():
    with pytest.raises(IntegrityError, match="learning 987654 does not exist"), transaction.atomic():
        LearningInjection.objects.create(learning_id=987654, story="PD-9", domain="d", project="p", at=AT)
    assert not LearningInjection.objects.exists()


MIGRATION = importlib.import_module("memory.migrations.0016_injection_learning_key")
BEFORE = [("memory", "0015_denser_hnsw_graphs")]
AFTER = [("memory", "0016_injection_learning_key")]


def index_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_learninginjection'")
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_earlier_injections_their_key_batch_after_batch(monkeypatch):
    monkeypatch.setattr(MIGRATION, "BATCH", 2)  # five rows: three batches
    with back_at(BEFORE) as old:
        learning_model = old.get_model("memory", "Learning")
        injection_model = old.get_model("memory", "LearningInjection")
        learnings = [
            learning_model.objects.create(
                story=f"PD-{n}", gate=n, domain="d", project="p", tags=[f"#t{n}"], tags_hash=f"{n:064x}", text="t"
            )
            for n in range(1, 4)
        ]
        for n in range(5):
            injection_model.objects.create(
                learning=learnings[n % 3], story=f"PD-{10 + n}", domain="d", project="p", at=AT
            )
        assert "injection_learning_story" in index_names()

        migrate(AFTER)

    assert LearningInjection.objects.count() == 5
    assert keys() == {key(row) for row in learnings}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name, is_nullable FROM information_schema.columns"
            " WHERE table_name = 'memory_learninginjection' AND column_name LIKE 'learning\\_%%'"
        )
        assert dict(cursor.fetchall()) == {
            "learning_id": "NO",
            "learning_story": "NO",
            "learning_gate": "NO",
            "learning_tags_hash": "NO",
        }
    names = index_names()
    assert {"injection_score_key", "injection_learning"} <= names
    assert "injection_learning_story" not in names
