"""Erasure audit rows keep no hash of the subject's key (issue 34, point 6).

Earlier releases wrote ``{"key_sha256": sha256(key)}`` on every ``subject.erased`` row, which is
reversed by hashing guesses for names such as ``alice``. Each such row gets a random
``erasure_id`` in its place (memory/subjects/services.py ``erase``). Forward-only: the hashes are
gone for good. The rows are few (one per erasure), updated in one statement.
"""

import uuid

from django.db import migrations


def drop_key_hashes(apps, schema_editor) -> None:
    AuditEvent = apps.get_model("governance", "AuditEvent")
    for event in AuditEvent.objects.filter(action="subject.erased", data__has_key="key_sha256").only("pk", "data"):
        data = {name: value for name, value in event.data.items() if name != "key_sha256"}
        data.setdefault("erasure_id", uuid.uuid4().hex)
        AuditEvent.objects.filter(pk=event.pk).update(data=data)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0017_seed_sentiments_whole_seconds"),
        ("governance", "0002_initial"),
    ]

    operations = [migrations.RunPython(drop_key_hashes, migrations.RunPython.noop)]
