"""The admin lists keys without secrets, shows a new key once, and revokes keys."""

from __future__ import annotations

import re

import pytest

from governance.kernel import keys
from governance.kernel.models import ApiKey
from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key


@pytest.mark.django_db
def test_the_list_shows_no_secret(admin_client, agent):
    api_key, plain = issue_api_key(actor=SYSTEM, name="ci runner", agent=agent)

    html = admin_client.get("/admin/governance/apikey/").content.decode()
    assert "ci runner" in html
    assert api_key.prefix in html
    assert plain not in html
    assert api_key.key_hash not in html
    detail = admin_client.get(f"/admin/governance/apikey/{api_key.pk}/change/").content.decode()
    assert plain not in detail
    assert api_key.key_hash not in detail


@pytest.mark.django_db
def test_adding_a_key_shows_it_once(admin_client, agent):
    response = admin_client.post(
        "/admin/governance/apikey/add/", {"name": "from admin", "agent": agent.pk, "user": ""}, follow=True
    )

    shown = re.findall(r"gov_ag_[0-9a-f]{12}_[A-Za-z0-9_\-]+", response.content.decode())
    assert len(shown) == 1
    api_key = ApiKey.objects.get(name="from admin")
    assert keys.matches(shown[0], api_key.key_hash)
    assert api_key.created_by == "user:admin"
    again = admin_client.get("/admin/governance/apikey/").content.decode()
    assert shown[0] not in again


@pytest.mark.django_db
def test_a_key_needs_exactly_one_owner(admin_client, agent, admin_operator):
    response = admin_client.post(
        "/admin/governance/apikey/add/", {"name": "both", "agent": agent.pk, "user": admin_operator.pk}
    )
    assert b"exactly one" in response.content
    assert not ApiKey.objects.filter(name="both").exists()


@pytest.mark.django_db
def test_the_revoke_action(admin_client, agent, client):
    api_key, plain = issue_api_key(actor=SYSTEM, name="to revoke", agent=agent)

    admin_client.post("/admin/governance/apikey/", {"action": "revoke", "_selected_action": [api_key.pk]}, follow=True)

    api_key.refresh_from_db()
    assert api_key.revoked_at is not None
    assert api_key.revoked_by == "user:admin"
    response = client.get(f"/api/v1/agents/{agent.agent_id}", HTTP_AUTHORIZATION=f"Bearer {plain}")
    assert response.status_code == 401


@pytest.mark.django_db
def test_keys_cannot_be_deleted_from_the_admin(admin_client, agent):
    api_key, _ = issue_api_key(actor=SYSTEM, name="kept", agent=agent)
    admin_client.post(f"/admin/governance/apikey/{api_key.pk}/delete/", {"post": "yes"})
    assert ApiKey.objects.filter(pk=api_key.pk).exists()
