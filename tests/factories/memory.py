"""Factories of the memory app: learnings and what scores them, watch notes, vectors and subjects."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import factory
from django.utils import timezone

from memory.models import (
    Embedding,
    GateResult,
    Learning,
    LearningInjection,
    ProfileFact,
    ReuseScore,
    Subject,
    VeilleNote,
)
from memory.scoring import compute_reuse_score
from memory.tags import compute_tags_hash

if TYPE_CHECKING:
    from agents.models import Agent


class LearningFactory(factory.django.DjangoModelFactory[Learning]):
    """A story-scope learning whose tags_hash matches its tags, as the services would store it."""

    class Meta:
        model = Learning

    story = "PD-1"
    gate = 3
    domain = "tooling"
    project = "gov"
    tags = factory.LazyFunction(list)
    tags_hash = factory.LazyAttribute(lambda o: compute_tags_hash(o.tags))
    text = factory.Sequence(lambda n: f"learning {n}")


class LearningInjectionFactory(factory.django.DjangoModelFactory[LearningInjection]):
    """The learning served to another story, now, in the learning's own domain and project."""

    class Meta:
        model = LearningInjection

    learning = factory.SubFactory(LearningFactory)
    story = "PD-9"
    domain = factory.SelfAttribute("learning.domain")
    project = factory.SelfAttribute("learning.project")
    at = factory.LazyFunction(timezone.now)


class GateResultFactory(factory.django.DjangoModelFactory[GateResult]):
    """A gate-8 GO, now: what counts a story as a success in reuse scores."""

    class Meta:
        model = GateResult

    story = "PD-9"
    gate = 8
    verdict = GateResult.Verdict.GO
    at = factory.LazyFunction(timezone.now)


class ReuseScoreFactory(factory.django.DjangoModelFactory[ReuseScore]):
    """A score row whose reuse_score is the seed's formula of its counts."""

    class Meta:
        model = ReuseScore

    story = "PD-1"
    gate = 3
    tags_hash = factory.LazyFunction(lambda: compute_tags_hash([]))
    nb_injections = 1
    nb_stories_gate8_go = 0
    nb_domains = 1
    reuse_score = factory.LazyAttribute(
        lambda o: compute_reuse_score(o.nb_injections, o.nb_stories_gate8_go, o.nb_domains)
    )
    computed_at = factory.LazyFunction(timezone.now)


class VeilleNoteFactory(factory.django.DjangoModelFactory[VeilleNote]):
    """A watch note posted to the API (a name, not a file), with a strong signal."""

    class Meta:
        model = VeilleNote

    path = factory.Sequence(lambda n: f"api/note-{n}.md")
    title = factory.Sequence(lambda n: f"Note {n}")
    date = datetime.date(2026, 5, 1)
    verdict_veille = VeilleNote.Verdict.SIGNAL
    impact_pv = VeilleNote.Impact.FORT
    summary = factory.LazyAttribute(lambda o: f"summary of {o.title}")


class EmbeddingFactory(factory.django.DjangoModelFactory[Embedding]):
    """A vector row; ``object_id`` names the embedded row, so tests give it."""

    class Meta:
        model = Embedding

    kind = "learning"
    object_id = factory.Sequence(lambda n: n + 1)
    model = "m"
    embedding = factory.LazyFunction(lambda: [1.0, 0.0, 0.0])
    dimension = factory.LazyAttribute(lambda o: len(o.embedding))
    text_sha256 = "0" * 64


def _allow_agents(subject: Subject, create: bool, extracted: list[Agent] | None, **kwargs: Any) -> None:
    """SubjectFactory(allowed_agents=[agent]): only those agents reach the subject's memory."""
    if create and extracted:
        subject.allowed_agents.add(*extracted)


class SubjectFactory(factory.django.DjangoModelFactory[Subject]):
    """A subject with no documents and no memory yet, open to every agent unless told otherwise."""

    class Meta:
        model = Subject
        skip_postgeneration_save = True

    key = factory.Sequence(lambda n: f"subject-{n}")
    allowed_agents = factory.PostGeneration(_allow_agents)


class ProfileFactFactory(factory.django.DjangoModelFactory[ProfileFact]):
    class Meta:
        model = ProfileFact

    subject = factory.SubFactory(SubjectFactory)
    field = "name"
    value = factory.Sequence(lambda n: f"Name {n}")
    confidence = 0.9
