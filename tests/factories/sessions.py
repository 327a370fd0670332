"""Factories of the sessions app (label ai_sessions): sessions and automations."""

from __future__ import annotations

import factory

from sessions.models import AISession, Automation
from tests.factories.agents import AgentFactory


class AISessionFactory(factory.django.DjangoModelFactory[AISession]):
    """A CHAT session, inactive and IDLE as a new session is."""

    class Meta:
        model = AISession

    agent = factory.SubFactory(AgentFactory)
    name = factory.Sequence(lambda n: f"session {n}")
    type = "CHAT"


class AutomationFactory(factory.django.DjangoModelFactory[Automation]):
    """A MANUAL automation of the agent, with an empty SEED session of its own."""

    class Meta:
        model = Automation

    agent = factory.SubFactory(AgentFactory)
    name = factory.Sequence(lambda n: f"automation {n}")
    seed_session = factory.SubFactory(AISessionFactory, agent=factory.SelfAttribute("..agent"), type="SEED")
    trigger = Automation.Trigger.MANUAL
    created_by = "test"
