"""Factories of the agents app: agents (without a manifest) and what they measured."""

from __future__ import annotations

import factory
from django.utils import timezone

from agents.models import Agent, KpiSample


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
