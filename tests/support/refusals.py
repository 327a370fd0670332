"""The two things every refusal of the adversarial suite must prove: nothing was written, and the
attempt is in the audit trail."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from governance.kernel.models import AuditEvent
from governance.kernel.services import REFUSED

# Tables a refused request may touch without writing anything of its own: the trail itself, a
# key's last use, and the login throttling and session bookkeeping of the web side.
UNWATCHED = ("governance_auditevent", "governance_apikey", "axes_", "django_session")


def table_fingerprints() -> dict[str, str]:
    """An MD5 of every row of every table: any insert, update or delete changes it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
        )
        tables = [name for (name,) in cursor.fetchall() if not name.startswith(UNWATCHED)]
        prints = {}
        for table in tables:
            quoted = connection.ops.quote_name(table)
            cursor.execute(f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {quoted} t")
            prints[table] = cursor.fetchone()[0]
    return prints


@contextmanager
def nothing_written() -> Iterator[None]:
    """Fails the block if any watched table changed in it: a refusal must leave no trace but the trail."""
    before = table_fingerprints()
    yield
    after = table_fingerprints()
    changed = sorted(table for table in before if before[table] != after.get(table))
    assert not changed, f"a refused request changed {changed}"


def refusals_since(last_id: int) -> list[AuditEvent]:
    """The refusals audited after ``last_id`` (see `last_audit_id`), oldest first."""
    return list(AuditEvent.objects.filter(pk__gt=last_id, action=REFUSED).order_by("pk"))


def last_audit_id() -> int:
    """Where the audit trail stands now, to read what a request adds to it."""
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
