"""The registries as operators manage them outside the API: the Django admin (add, relabel, retire
as an action, never delete), the ``registry`` command, and the filters of the pages and the admin
that list their values."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from agents import registries
from agents.models import Domain, Intent
from agents.vocabulary import Registry
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from tests.factories.agents import AgentFactory


def run(*args: str) -> str:
    out = StringIO()
    call_command("registry", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


# The admin ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_admin_adds_a_value_through_the_admin_and_the_trail_names_them(client, staff_admin):
    client.force_login(staff_admin)

    response = client.post(reverse("admin:agents_domain_add"), {"value": "support", "label": "Support"})

    assert response.status_code == 302, response.content.decode()[:2000]
    assert Domain.objects.get(value="support").created_by == "user:alice"
    assert AuditEvent.objects.get(action="registry.added").actor == "user:alice"


@pytest.mark.django_db
def test_the_admin_refuses_a_value_of_the_wrong_shape(client, staff_admin):
    client.force_login(staff_admin)

    response = client.post(reverse("admin:agents_domain_add"), {"value": "Customer Support", "label": "x"})

    assert response.status_code == 200  # the form again, with the error
    assert not Domain.objects.filter(label="x").exists()


@pytest.mark.django_db
def test_an_admin_relabels_a_value_and_cannot_change_the_value_itself(client, staff_admin):
    client.force_login(staff_admin)
    seo = Domain.objects.get(value="seo")

    response = client.post(
        reverse("admin:agents_domain_change", args=[seo.pk]), {"value": "hacked", "label": "Search engines"}
    )

    assert response.status_code == 302
    seo.refresh_from_db()
    assert (seo.value, seo.label) == ("seo", "Search engines")
    assert AuditEvent.objects.get(action="registry.relabelled").actor == "user:alice"


@pytest.mark.django_db
def test_an_admin_retires_values_with_the_action_and_nothing_is_ever_deleted(client, staff_admin):
    client.force_login(staff_admin)
    chosen = list(Intent.objects.filter(value__in=["kg_diagnose", "routes_sync"]).values_list("pk", flat=True))
    changelist = reverse("admin:agents_intent_changelist")

    client.post(changelist, {"action": "retire", "_selected_action": chosen})

    assert set(Intent.objects.filter(retired_at__isnull=False).values_list("value", "retired_by")) == {
        ("kg_diagnose", "user:alice"),
        ("routes_sync", "user:alice"),
    }
    assert AuditEvent.objects.filter(action="registry.retired", actor="user:alice").count() == 2
    assert "delete_selected" not in client.get(changelist).content.decode()
    assert client.get(reverse("admin:agents_intent_delete", args=[chosen[0]])).status_code == 403


@pytest.mark.django_db
def test_a_staff_viewer_reads_the_registries_but_changes_nothing(client, staff_viewer):
    client.force_login(staff_viewer)

    assert client.get(reverse("admin:agents_entitytype_changelist")).status_code == 200
    assert client.get(reverse("admin:agents_entitytype_add")).status_code == 403
    client.post(reverse("admin:agents_entitytype_changelist"), {"action": "retire", "_selected_action": [1]})
    assert not AuditEvent.objects.filter(action="registry.retired").exists()


# The command --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_command_adds_relabels_retires_and_lists(staff_admin):
    assert "added" in run("add", "intents", "summarize_ticket", "--label", "Summarize a ticket", "--actor", "alice")
    assert "unchanged" in run("add", "intents", "summarize_ticket")
    run("label", "intents", "summarize_ticket", "Summarize one ticket", "--actor", "alice")
    assert "retired" in run("retire", "intents", "summarize_ticket", "--actor", "alice")

    listed = run("list", "intents")

    assert "summarize_ticket" in listed
    assert "Summarize one ticket" in listed
    assert "retired" in listed
    assert "seo_audit" in listed
    actions = AuditEvent.objects.filter(target_type="agents.intent").values_list("action", "actor")
    assert list(actions.order_by("pk")) == [
        ("registry.added", "user:alice"),
        ("registry.relabelled", "user:alice"),
        ("registry.retired", "user:alice"),
    ]


def test_the_command_acts_as_the_system_when_no_actor_is_named(db):
    run("add", "domains", "support")

    assert Domain.objects.get(value="support").created_by == "system"
    assert AuditEvent.objects.get(action="registry.added").actor == "system"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "colours", "red"), "colours"),
        (("add", "intents", "Summarize Ticket"), "value"),
        (("retire", "intents", "never_added"), "never_added"),
        (("add", "intents", "summarize_ticket", "--actor", "nobody"), "nobody"),
    ],
)
def test_the_command_refuses_what_the_api_refuses(args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not Intent.objects.filter(value="summarize_ticket").exists()


@pytest.mark.django_db
def test_a_named_actor_needs_the_registrys_permission(viewer):
    with pytest.raises(CommandError, match=r"agents\.add_domain"):
        run("add", "domains", "support", "--actor", "victor")
    assert not Domain.objects.filter(value="support").exists()


# Filters that list the values ---------------------------------------------------------------------


@pytest.mark.django_db
def test_the_fleet_page_filters_by_a_domain_an_operator_added(client, viewer):
    registries.add_value(Registry.DOMAINS, "support", label="Customer support", actor=SYSTEM)
    AgentFactory(agent_id="agent.support.triage", domain="support", role="executor")
    AgentFactory(agent_id="agent.seo.other", domain="seo", role="executor")
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-list"), {"domain": "support"}).content.decode()

    assert '<option value="support" selected>Customer support</option>' in html
    assert "agent.support.triage" in html
    assert "agent.seo.other" not in html


@pytest.mark.django_db
def test_the_job_page_offers_retired_intents_too_since_old_jobs_carry_them(client, viewer):
    registries.add_value(Registry.INTENTS, "summarize_ticket", actor=SYSTEM)
    registries.retire_value(Registry.INTENTS, "summarize_ticket", actor=SYSTEM)
    client.force_login(viewer)

    html = client.get(reverse("agents:job-list")).content.decode()

    assert 'value="summarize_ticket"' in html
    assert "(retired)" in html


@pytest.mark.django_db
def test_the_admin_filters_agents_by_the_registrys_values(admin_client):
    registries.add_value(Registry.ROLES, "triager", label="Triager", actor=SYSTEM)
    AgentFactory(agent_id="agent.support.triage", domain="seo", role="triager")
    AgentFactory(agent_id="agent.seo.other", domain="seo", role="executor")

    html = admin_client.get(reverse("admin:agents_agent_changelist"), {"role__exact": "triager"}).content.decode()

    assert "Triager" in html
    assert ">agent.support.triage</a>" in html
    assert ">agent.seo.other</a>" not in html
