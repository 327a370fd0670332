"""API keys: hashed, shown once, scoped, revocable, with last use recorded."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from governance.kernel import keys
from governance.kernel.models import ApiKey, AuditEvent
from governance.kernel.principals import Principal
from governance.kernel.services import issue_api_key, revoke_api_key
from tests.support.api import Api


@pytest.mark.django_db
def test_only_the_hash_is_stored(agent):
    api_key, plain = issue_api_key(actor=Principal(), name="ci", agent=agent)

    row = ApiKey.objects.values().get(pk=api_key.pk)
    assert plain not in str(row)
    assert row["key_hash"] == keys.hash_key(plain)
    assert plain.startswith(f"gov_ag_{row['prefix']}_")


@pytest.mark.django_db
def test_a_key_opens_the_api_for_its_agent(agent_api, agent):
    response = agent_api.get(f"/agents/{agent.agent_id}")
    assert response.status_code == 200
    assert response.json()["agent_id"] == agent.agent_id


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer nonsense", "Basic dXNlcjpwYXNz", "Bearer gov_ag_000000000000_forged"],
)
def test_401_without_a_valid_key(client, agent, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    assert client.get(f"/api/v1/agents/{agent.agent_id}", **extra).status_code == 401


@pytest.mark.django_db
def test_a_right_prefix_with_a_wrong_secret_is_refused(client, agent):
    _, plain = issue_api_key(actor=Principal(), name="ci", agent=agent)
    tampered = plain[:-4] + ("AAAA" if not plain.endswith("AAAA") else "BBBB")

    assert Api(client, tampered).get(f"/agents/{agent.agent_id}").status_code == 401


@pytest.mark.django_db
def test_401_with_a_revoked_key(client, agent, admin_operator):
    api_key, plain = issue_api_key(actor=Principal(), name="ci", agent=agent)
    api = Api(client, plain)
    assert api.get(f"/agents/{agent.agent_id}").status_code == 200

    revoke_api_key(api_key, actor=Principal(user=admin_operator))

    assert api.get(f"/agents/{agent.agent_id}").status_code == 401
    api_key.refresh_from_db()
    assert api_key.revoked_by == "user:alice"
    assert AuditEvent.objects.filter(action="api_key.revoked", target_id=str(api_key.pk), actor="user:alice").exists()


@pytest.mark.django_db
def test_a_deactivated_operator_loses_api_access(admin_api, admin_operator):
    admin_operator.is_active = False
    admin_operator.save()
    assert admin_api.get("/agents").status_code == 401


@pytest.mark.django_db
def test_last_used_at_is_recorded_but_not_on_every_call(agent_api, agent):
    api_key = ApiKey.objects.get(agent=agent)
    assert api_key.last_used_at is None

    agent_api.get(f"/agents/{agent.agent_id}")
    api_key.refresh_from_db()
    first_use = api_key.last_used_at
    assert first_use is not None

    agent_api.get(f"/agents/{agent.agent_id}")
    api_key.refresh_from_db()
    assert api_key.last_used_at == first_use  # within the resolution: no write

    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=first_use - timedelta(minutes=5))
    agent_api.get(f"/agents/{agent.agent_id}")
    api_key.refresh_from_db()
    assert api_key.last_used_at > first_use - timedelta(minutes=1)
    assert api_key.last_used_at <= timezone.now()


@pytest.mark.django_db
def test_a_key_is_bound_to_exactly_one_owner(agent, admin_operator):
    with pytest.raises(ValueError, match="exactly one"):
        issue_api_key(actor=Principal(), name="both", agent=agent, user=admin_operator)
    with pytest.raises(ValueError, match="exactly one"):
        issue_api_key(actor=Principal(), name="none")


@pytest.mark.django_db
def test_create_api_key_command_prints_the_key_once(agent, client):
    out, err = StringIO(), StringIO()
    call_command("create_api_key", "--agent", agent.agent_id, stdout=out, stderr=err)

    plain = out.getvalue().strip()
    assert keys.parse(plain).kind == "agent"
    assert "will not be shown again" in err.getvalue()
    assert Api(client, plain).get(f"/agents/{agent.agent_id}").status_code == 200


@pytest.mark.django_db
def test_create_api_key_command_for_an_operator(admin_operator, client):
    out = StringIO()
    call_command("create_api_key", "--user", admin_operator.username, stdout=out, stderr=StringIO())

    api_key = ApiKey.objects.get(user=admin_operator)
    assert api_key.kind == "operator"
    assert Api(client, out.getvalue().strip()).get("/agents").status_code == 200


@pytest.mark.django_db
def test_create_api_key_command_refuses_unknown_owners():
    with pytest.raises(CommandError, match="No agent"):
        call_command("create_api_key", "--agent", "agent.ghost", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="No user"):
        call_command("create_api_key", "--user", "ghost", stdout=StringIO(), stderr=StringIO())
    assert not ApiKey.objects.exists()
