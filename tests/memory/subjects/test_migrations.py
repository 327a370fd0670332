"""Memory 0017 and 0018 on the data of an earlier release: float transition durations become
whole seconds, and the erasure audit rows lose the hash of the key they kept."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.support.migrations import back_at, migrate

BEFORE = [("memory", "0016_injection_learning_key")]
AFTER = [("memory", "0018_erasures_keep_no_key_hash")]


@pytest.mark.django_db(transaction=True)
def test_durations_are_rounded_and_erasures_lose_the_key_hash():
    digest = hashlib.sha256(b"alice").hexdigest()
    with back_at(BEFORE) as old:
        subject = old.get_model("memory", "Subject").objects.create(key="bob")
        transitions = old.get_model("memory", "EmotionTransition").objects
        up = transitions.create(
            subject=subject, from_emotion="neutre", to_emotion="joyeux", count=2, avg_duration_seconds=120.6
        )
        down = transitions.create(
            subject=subject, from_emotion="joyeux", to_emotion="neutre", count=1, avg_duration_seconds=89.2
        )
        audit = old.get_model("governance", "AuditEvent").objects
        erased = audit.create(
            actor="user:op",
            action="subject.erased",
            target_type="memory.subject",
            target_id="",
            data={"key_sha256": digest},
        )
        other = audit.create(
            actor="user:op",
            action="subject.preference_added",
            target_type="memory.subject",
            target_id="1",
            data={"fact": "pref_001"},
        )

        new = migrate(AFTER)

    durations = dict(new.get_model("memory", "EmotionTransition").objects.values_list("pk", "avg_duration_seconds"))
    assert durations == {up.pk: 121, down.pk: 89}
    assert all(type(value) is int for value in durations.values())
    events = new.get_model("governance", "AuditEvent").objects
    scrubbed = events.get(pk=erased.pk).data
    assert set(scrubbed) == {"erasure_id"}
    assert digest not in json.dumps(scrubbed)
    assert events.get(pk=other.pk).data == {"fact": "pref_001"}
