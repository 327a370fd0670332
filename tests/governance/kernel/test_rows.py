"""The UPDATEs of governance/kernel/rows.py skip ``save()`` and the model signals. They are kept
only for the models it names (the session processor's state at every event, the parsed answer,
the tick's next runs), and only while no ``pre_save``/``post_save`` receiver listens to those
models: a receiver connected to one would silently miss those writes, so these tests fail first.
Every other write goes through the ORM and its receivers hear it."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db.models.signals import post_save, pre_save

from governance.kernel import rows
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from governance.kernel.services import record
from tests.factories.agents import AgentFactory


@pytest.mark.parametrize("label", sorted(rows.UPDATED_WITHOUT_SIGNALS))
def test_no_save_signal_receiver_listens_to_a_model_rows_updates(label):
    model = apps.get_model(label)

    signals = {"pre_save": pre_save, "post_save": post_save}
    listening = [name for name, signal in signals.items() if signal.has_listeners(model)]

    assert listening == [], (
        f"{model._meta.label} has {' and '.join(listening)} receivers, but governance/kernel/rows.py updates it"
        " without save() or signals: write it through the ORM (sessions/processor.py, sessions/scheduler.py)"
        " and take it out of rows.UPDATED_WITHOUT_SIGNALS"
    )


def test_rows_refuses_to_update_a_model_it_does_not_name():
    event = AuditEvent(pk=1, actor="system", action="x", target_type="t", target_id="1")

    with pytest.raises(TypeError, match=r"governance\.AuditEvent is not in rows\.UPDATED_WITHOUT_SIGNALS"):
        rows.update(event, ["action"])


@pytest.mark.django_db
def test_an_audit_row_is_saved_through_the_orm_so_its_receivers_hear_it():
    agent = AgentFactory()
    heard: list[tuple[str, bool]] = []

    def receiver(sender: type[AuditEvent], instance: AuditEvent, created: bool, **kwargs: object) -> None:
        heard.append((instance.action, created))

    post_save.connect(receiver, sender=AuditEvent)
    try:
        record(actor=SYSTEM, action="agent.noted", target=agent)
    finally:
        post_save.disconnect(receiver, sender=AuditEvent)

    assert heard == [("agent.noted", True)]
