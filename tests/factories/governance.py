"""Factories of the governance app: operators (with their roles), task runs, review items and
contract checks."""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group
from django.utils import timezone

from governance.contracts.models import Contract, ContractCheck
from governance.kernel.models import TaskRun
from governance.reviews.models import ReviewItem


def _join_groups(user: AbstractUser, create: bool, extracted: list[str] | None, **kwargs: Any) -> None:
    """UserFactory(roles=["Reviewer"]) puts the user in those groups: roles are groups here."""
    if create and extracted:
        user.groups.add(*Group.objects.filter(name__in=extracted))


class UserFactory(factory.django.DjangoModelFactory[AbstractUser]):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct horse battery staple")
    roles = factory.PostGeneration(_join_groups)


class TaskRunFactory(factory.django.DjangoModelFactory[TaskRun]):
    """A maintenance task run, still running unless a test says how it ended."""

    class Meta:
        model = TaskRun

    task_name = "governance.heartbeat"
    task_id = factory.Sequence(lambda n: f"task-{n}")
    started_at = factory.LazyFunction(timezone.now)


class ReviewItemFactory(factory.django.DjangoModelFactory[ReviewItem]):
    class Meta:
        model = ReviewItem

    kind = "escalation"
    title = factory.Sequence(lambda n: f"review item {n}")


class ContractFactory(factory.django.DjangoModelFactory[Contract]):
    """A contract version with no fields: enough for checks to point at."""

    class Meta:
        model = Contract

    name = factory.Sequence(lambda n: f"contract_{n}")
    version = 1
    module = "m"
    section = "s"
    content_sha256 = "0" * 64
    created_by = "test"


class ContractCheckFactory(factory.django.DjangoModelFactory[ContractCheck]):
    """A compliant check of an output, as the audit stores it."""

    class Meta:
        model = ContractCheck

    contract = factory.SubFactory(ContractFactory)
    contract_name = factory.SelfAttribute("contract.name")
    submitted_by = "test"
    compliant = True
    output_sha256 = "0" * 64
    checked_at = factory.LazyFunction(timezone.now)


def recent_heartbeat() -> TaskRun:
    """A heartbeat that just ran: with the test database and the broker up, the plane is ready
    (GET /health/ready answers 200, not the 503 of a plane whose beat never ran)."""
    now = timezone.now()
    return TaskRunFactory.create(
        task_name="governance.heartbeat", status=TaskRun.Status.SUCCESS, started_at=now, finished_at=now
    )
