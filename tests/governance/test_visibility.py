"""`visible_to(principal)`: the one read filter, the same rule in every app."""

from __future__ import annotations

import pytest

from agents.models import Agent, Job
from governance.contracts.models import ContractCheck
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews.models import ReviewItem
from memory.models import Learning, Subject
from sessions.models import AISession
from tests.factories.agents import AgentFactory
from tests.factories.governance import ContractCheckFactory, ContractFactory, ReviewItemFactory
from tests.factories.memory import LearningFactory, SubjectFactory
from tests.factories.sessions import AISessionFactory
from tests.support.manifests import load


@pytest.fixture
def fleet(db):
    vlevel, indexer = load("agent.seo.vlevel"), load("agent.rag.indexer")
    contract = ContractFactory()
    for agent in (vlevel, indexer):
        AISessionFactory(agent=agent, name=f"{agent.agent_id} chat")
        ReviewItemFactory(title=agent.agent_id, agent=agent)
        ContractCheckFactory(contract=contract, agent=agent)
    LearningFactory(text="shared")
    open_subject = SubjectFactory(key="bob")
    SubjectFactory(key="carol", allowed_agents=[indexer])
    return vlevel, indexer, open_subject


OWNED = [AISession, ReviewItem, ContractCheck]


@pytest.mark.django_db
@pytest.mark.parametrize("model", OWNED)
def test_an_agent_sees_only_its_own_rows(fleet, model):
    vlevel, _, _ = fleet
    assert {row.agent_id for row in model.objects.visible_to(Principal(agent=vlevel))} == {vlevel.pk}


@pytest.mark.django_db
@pytest.mark.parametrize("model", [*OWNED, Learning, Subject, Agent, Job])
def test_people_need_the_view_permission_and_the_system_sees_everything(fleet, model, viewer, outsider):
    everything = model.objects.count()
    assert model.objects.visible_to(Principal(user=viewer)).count() == everything
    assert model.objects.visible_to(Principal(user=outsider)).count() == 0
    assert model.objects.visible_to(SYSTEM).count() == everything


@pytest.mark.django_db
def test_an_agent_sees_the_learnings_its_manifests_memory_reaches(fleet):
    """Its own domain's at any scope; another domain's only once promoted, and only with shared
    memory on (memory/reach.py): the indexer (RAG, shared memory off) never reads SEO's."""
    vlevel, indexer, _ = fleet
    story = LearningFactory(domain="SEO", text="seo, story scope")
    LearningFactory(domain="RAG", text="rag, global", scope=Learning.Scope.GLOBAL)  # not a namespace of vlevel's
    LearningFactory(domain="RAG", text="rag, story scope")

    assert {row.pk for row in Learning.objects.visible_to(Principal(agent=vlevel))} == {story.pk}
    seen_by_indexer = {row.text for row in Learning.objects.visible_to(Principal(agent=indexer))}
    assert seen_by_indexer == {"rag, global", "rag, story scope"}


@pytest.mark.django_db
def test_a_restricted_subject_is_seen_by_its_named_agents_only(fleet):
    vlevel, indexer, _ = fleet
    assert sorted(s.key for s in Subject.objects.visible_to(Principal(agent=vlevel))) == ["bob"]
    assert sorted(s.key for s in Subject.objects.visible_to(Principal(agent=indexer))) == ["bob", "carol"]


@pytest.mark.django_db
def test_an_agent_without_a_manifest_sees_no_subject(fleet):
    assert not Subject.objects.visible_to(Principal(agent=AgentFactory(agent_id="agent.bare"))).exists()
