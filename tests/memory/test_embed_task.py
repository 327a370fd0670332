"""The `memory.embed` task through a backend outage: an Ollama server that refuses twice and then
answers gets the vector stored in the end; a wrong-sized answer is not retried."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Embedding, Learning
from memory.tasks import embed
from tests.factories.memory import LearningFactory
from tests.memory.test_embeddings import Reply, vector_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def learning() -> Learning:
    return LearningFactory.create()


def flaky_ollama(failures: int, dimension: int = 768):
    calls: list[int] = []

    def respond(path: str, body: Any) -> Reply:
        calls.append(1)
        if len(calls) <= failures:
            return Reply(status=503, body={"error": "model is loading"})
        return Reply(body={"embedding": vector_for(body["prompt"], dimension)})

    return respond, calls


def use_ollama(settings, url: str) -> None:
    settings.EMBEDDING_BACKEND = "ollama"
    settings.EMBEDDING_URL = url
    settings.EMBEDDING_MODEL = "nomic-embed-text"
    settings.EMBEDDING_DIMENSION = 768
    settings.CELERY_TASK_ALWAYS_EAGER = True


def test_an_outage_of_the_embedding_server_is_retried_until_it_answers(serve, settings, learning):
    respond, calls = flaky_ollama(failures=2)
    use_ollama(settings, serve(respond).url)

    embed.apply(args=("learning", [learning.pk]))

    assert len(calls) == 3
    assert Embedding.objects.filter(kind="learning", object_id=learning.pk, model="nomic-embed-text").exists()


def test_a_redelivered_task_computes_nothing_twice(serve, settings, learning):
    respond, calls = flaky_ollama(failures=0)
    use_ollama(settings, serve(respond).url)

    embed.apply(args=("learning", [learning.pk]))
    embed.apply(args=("learning", [learning.pk]))  # acks_late: a dead worker's task comes back

    assert len(calls) == 1
    assert Embedding.objects.filter(kind="learning", object_id=learning.pk).count() == 1


def test_a_vector_of_the_wrong_size_is_not_retried(serve, settings, learning):
    respond, calls = flaky_ollama(failures=0, dimension=384)
    use_ollama(settings, serve(respond).url)

    embed.apply(args=("learning", [learning.pk]))

    assert len(calls) == 1
    assert not Embedding.objects.exists()
