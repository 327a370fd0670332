"""factory-boy factories shared by every app's tests."""

from __future__ import annotations

import re
from pathlib import Path

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


SEED_MANIFESTS = Path(__file__).resolve().parent.parent / "agents" / "manifests"


def load_seed_manifests() -> dict[str, Agent]:
    """The seed fleet (vlevel, indexer, architect), loaded through the registry like the API does."""
    from agents.registry import load_manifest
    from governance.kernel.principals import SYSTEM

    for path in sorted(SEED_MANIFESTS.glob("*.yaml")):
        load_manifest(path.read_text(encoding="utf-8"), actor=SYSTEM)
    return {agent.agent_id: agent for agent in Agent.objects.select_related("active_manifest")}


def seed_manifest_text(agent_id: str, **changes: str) -> str:
    """The YAML of a seed manifest with some top-level scalar lines replaced (`version="1.1.0"`)."""
    text = (SEED_MANIFESTS / f"{agent_id}.yaml").read_text(encoding="utf-8")
    for key, value in changes.items():
        text = re.sub(rf"^(\s+){key}: .*$", rf'\g<1>{key}: "{value}"', text, count=1, flags=re.MULTILINE)
    return text


def submit_job(agent: Agent, payload: dict, *, intent: str = "seo_audit", key: str | None = None, **envelope):
    """A queued job, submitted by the agent through the service."""
    from agents import jobs
    from agents.envelope import JobEnvelopeIn
    from governance.kernel.principals import Principal

    data = {
        "intent": intent,
        "scope": {"entityType": "page"},
        "payload": payload,
        "context": {"source": "manual"},
        "idempotencyKey": key,
        **envelope,
    }
    return jobs.submit_job(JobEnvelopeIn.model_validate(data), actor=Principal(agent=agent))[0]


def finish_job(job, output: dict):
    """Lease the job, report one node, and submit ``output`` (an AgentOutput as a dict)."""
    from agents import jobs
    from agents.envelope import AgentOutput, GraphStateUpdate
    from governance.kernel.principals import Principal

    worker = Principal(agent=job.agent)
    job = jobs.claim_lease(job, actor=worker, owner="test-worker")
    job = jobs.update_state(job, GraphStateUpdate(currentNode="work"), actor=worker)
    jobs.submit_result(job, AgentOutput.model_validate(output), actor=worker)
    job.refresh_from_db()
    return job
