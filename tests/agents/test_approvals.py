"""Approval requests of agents: they never wait forever, and only their agent reads them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents import approvals
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from governance.reviews.models import ReviewItem
from governance.reviews.tasks import expire_due

pytestmark = pytest.mark.django_db


def test_a_request_past_its_deadline_is_expired_by_the_sweep(vlevel):
    item = approvals.request_approval(actor=Principal(agent=vlevel), title="Publish")
    ReviewItem.objects.filter(pk=item.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    counts = expire_due()

    assert counts["expired"] == 1
    item.refresh_from_db()
    assert item.status == ReviewItem.Status.EXPIRED
    assert item.decision.decided_by == "system"


def test_a_poll_past_the_deadline_sees_it_expired_even_before_the_sweep(vlevel):
    agent = Principal(agent=vlevel)
    item = approvals.request_approval(actor=agent, title="Publish")
    ReviewItem.objects.filter(pk=item.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert approvals.describe(approvals.approval(agent, item.pk))["status"] == "expired"


def test_an_operator_cannot_open_an_agent_approval(admin_operator):
    with pytest.raises(Forbidden):
        approvals.request_approval(actor=Principal(user=admin_operator), title="Publish")
    assert not ReviewItem.objects.exists()
