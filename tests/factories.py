"""factory-boy factories shared by every app's tests."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from agents.models import Agent


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct horse battery staple")

    @factory.post_generation
    def roles(self, create: bool, extracted: list[str] | None, **kwargs: object) -> None:
        """UserFactory(roles=["Reviewer"]) puts the user in those groups."""
        if create and extracted:
            self.groups.add(*Group.objects.filter(name__in=extracted))


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent
        django_get_or_create = ("agent_id",)

    agent_id = factory.Sequence(lambda n: f"agent.test.a{n}")
    name = factory.LazyAttribute(lambda o: f"Agent {o.agent_id}")
