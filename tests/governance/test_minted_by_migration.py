"""Migration 0011 adds who minted a key (and the same on decisions) while the previous release
still serves: that release, unaware of the columns, keeps issuing keys and recording decisions."""

from __future__ import annotations

import pytest

from tests.support.migrations import back_at, migrate

BEFORE = [("governance", "0010_admin_plurals")]
AFTER = [("governance", "0011_key_minted_by")]


@pytest.mark.django_db(transaction=True)
def test_the_previous_release_keeps_issuing_keys_and_recording_decisions():
    with back_at(BEFORE) as old:
        user = old.get_model("auth", "User").objects.create(username="rita")
        item = old.get_model("governance", "ReviewItem").objects.create(kind="test", title="Deploy?", payload={})

        new = migrate(AFTER)
        # Written the old release's way, without the new columns (their database defaults fill them).
        key = old.get_model("governance", "ApiKey").objects.create(
            name="late", kind="operator", user_id=user.pk, prefix="0123456789ab", key_hash="0" * 64, created_by="system"
        )
        decision = old.get_model("governance", "ReviewDecision").objects.create(
            item_id=item.pk, decision="approve", decided_by="user:rita", user_id=user.pk, payload_hash="0" * 64
        )

    assert new.get_model("governance", "ApiKey").objects.get(pk=key.pk).minted_by == ""
    assert new.get_model("governance", "ReviewDecision").objects.get(pk=decision.pk).minted_by == ""
