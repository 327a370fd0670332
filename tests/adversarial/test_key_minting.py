"""An operator key acts as its user, so an Admin must not mint one for someone else and decide as
them: a key is minted for yourself; another user's key comes from that user, from a superuser or
from the shell (create_api_key), and says who minted it, as does everything decided with it."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from governance.kernel.exceptions import Forbidden
from governance.kernel.models import ApiKey, AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import issue_api_key
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision
from tests.factories.governance import UserFactory
from tests.support.api import Api
from tests.support.refusals import nothing_written

OPERATOR_KEY = re.compile(r"gov_op_[0-9a-f]{12}_[A-Za-z0-9_\-]+")


@pytest.fixture
def root(db):
    return UserFactory(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def alice(db):
    """An Admin who is not a superuser."""
    return UserFactory(username="alice", roles=["Admin"], is_staff=True)


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def mint_in_admin(browser: Client, owner, name: str = "for rita") -> tuple[object, str | None]:
    response = browser.post("/admin/governance/apikey/add/", {"name": name, "agent": "", "user": owner.pk}, follow=True)
    shown = OPERATOR_KEY.findall(response.content.decode())
    return response, shown[0] if shown else None


@pytest.mark.django_db
def test_an_admin_cannot_mint_a_key_for_another_user(alice, root, reviewer):
    browser = signed_in(alice)
    for victim in (root, reviewer):
        with nothing_written():
            response, plain = mint_in_admin(browser, victim)

        assert plain is None
        assert "Select a valid choice" in response.content.decode()
    assert not ApiKey.objects.exists()


@pytest.mark.django_db
def test_the_admin_form_offers_an_admin_only_themselves(alice, root):
    html = signed_in(alice).get("/admin/governance/apikey/add/").content.decode()

    assert f'value="{alice.pk}"' in html
    assert f'value="{root.pk}"' not in html


@pytest.mark.django_db
def test_an_admin_mints_their_own_key_unmarked(alice):
    _, plain = mint_in_admin(signed_in(alice), alice, name="mine")

    assert plain is not None
    assert ApiKey.objects.get(name="mine").minted_by == ""


@pytest.mark.django_db
def test_the_service_refuses_an_admin_minting_for_another_user(alice, reviewer):
    with pytest.raises(Forbidden), nothing_written():
        issue_api_key(actor=Principal(user=alice), name="sneaky", user=reviewer)


@pytest.mark.django_db
def test_a_superuser_mints_a_key_for_another_user_marked_as_theirs(root, reviewer):
    _, plain = mint_in_admin(signed_in(root), reviewer)

    api_key = ApiKey.objects.get(name="for rita")
    assert plain is not None
    assert (api_key.user, api_key.minted_by) == (reviewer, "user:root")
    listing = signed_in(root).get("/admin/governance/apikey/").content.decode()
    assert "user:root" in listing


@pytest.mark.django_db
def test_a_decision_made_with_a_minted_key_names_the_user_and_the_minter(client, root, reviewer, agent):
    _, plain = mint_in_admin(signed_in(root), reviewer)
    item = reviews.open_item(actor=SYSTEM, kind="test", title="Deploy?", payload={"tool": "deploy"}, agent=agent)

    response = Api(client, plain).post(f"/reviews/{item.pk}/decision", {"decision": "approve"})

    assert response.status_code == 200, response.content
    decision = ReviewDecision.objects.get(item=item)
    assert (decision.user, decision.minted_by) == (reviewer, "user:root")
    audit = AuditEvent.objects.get(action="review.approve", target_id=str(item.pk))
    assert audit.data["minted_by"] == "user:root"
    inbox = signed_in(root).get("/inbox/").content.decode()
    assert "rita (key minted by user:root)" in inbox


@pytest.mark.django_db
def test_the_command_mints_for_anyone_and_is_named_as_the_minter(reviewer):
    out = StringIO()
    call_command("create_api_key", user="rita", name="from the shell", stdout=out, stderr=StringIO())

    api_key = ApiKey.objects.get(name="from the shell")
    assert OPERATOR_KEY.fullmatch(out.getvalue().strip())
    assert (api_key.user, api_key.minted_by) == (reviewer, "command:create_api_key")
