"""Factories of the agents app: agents (without a manifest), their jobs and what they measured."""

from __future__ import annotations

import factory
from django.utils import timezone

from agents.models import Agent, Job, KpiSample


class AgentFactory(factory.django.DjangoModelFactory[Agent]):
    """An agent with no manifest; `tests.support.manifests.load` gives one with its seed manifest."""

    class Meta:
        model = Agent
        django_get_or_create = ("agent_id",)

    agent_id = factory.Sequence(lambda n: f"agent.test.a{n}")
    name = factory.LazyAttribute(lambda o: f"Agent {o.agent_id}")


class KpiSampleFactory(factory.django.DjangoModelFactory[KpiSample]):
    class Meta:
        model = KpiSample

    agent = factory.SubFactory(AgentFactory)
    metric_id = "task_success_rate"
    value = 1.0
    recorded_at = factory.LazyFunction(timezone.now)


class JobFactory(factory.django.DjangoModelFactory[Job]):
    """A queued job stored as it is, unchecked: give it an agent with an active manifest
    (`tests.support.manifests.load`); admission itself is tested through POST /jobs."""

    class Meta:
        model = Job

    agent = factory.SubFactory(AgentFactory)
    manifest = factory.LazyAttribute(lambda job: job.agent.active_manifest)
    intent = "seo_audit"
    scope = factory.LazyFunction(lambda: {"entityType": "page"})
    constraints = factory.LazyFunction(dict)
    context = factory.LazyFunction(dict)
    idempotency_key = factory.Sequence(lambda n: f"factory-job-{n}")
