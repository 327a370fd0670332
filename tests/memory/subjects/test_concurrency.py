"""Real concurrent clients against the real web stack (gunicorn, 2 processes x 8 threads) on one
subject: what keeps a subject's emotion history bounded and its statistics whole, and its fact ids
consecutive, must be the database (a row lock, a counter row), not the luck of the schedule."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key
from memory.models import (
    EmotionEvent,
    EmotionState,
    EmotionTransition,
    Preference,
    Subject,
    SubjectCounter,
    SubjectMemory,
    TransitionProbability,
)
from memory.subjects import services as subjects
from tests.support.manifests import load

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"

# Forty emotions without a row in the transition matrix (it has rows for neutre, joyeux, triste,
# énervé and surpris), all different from each other and from "empathique": every move between them
# is allowed, and every one of the forty is a change of emotion whatever order the server applies
# them in, so the expected transition count does not depend on the schedule.
EMOTIONS = (
    "calme",
    "serein",
    "curieux",
    "nostalgique",
    "reconnaissant",
    "fier",
    "amusé",
    "inquiet",
    "ému",
    "soulagé",
    "impatient",
    "confiant",
    "déçu",
    "touché",
    "intrigué",
    "détendu",
    "enthousiaste",
    "attendri",
    "perplexe",
    "rassuré",
    "admiratif",
    "motivé",
    "content",
    "apaisé",
    "émerveillé",
    "embarrassé",
    "gêné",
    "optimiste",
    "pensif",
    "excité",
    "tendre",
    "joueur",
    "concentré",
    "méfiant",
    "songeur",
    "ravi",
    "agacé",
    "mélancolique",
    "étonné",
    "rêveur",
)


def _document(name: str) -> dict[str, Any]:
    """One of the seed's documents (memory/fixtures/alice), as the import takes it."""
    return json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture
def agent(transactional_db):
    """An agent whose manifest enables long-term memory: only such agents reach subjects."""

    return load("agent.seo.vlevel")


def _agent_key(agent: Any) -> str:
    return issue_api_key(actor=SYSTEM, name="concurrency", agent=agent)[1]


def _post(url: str, key: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _all_at_once(bodies: list[dict[str, Any]], call: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """One request per body, all released together by a barrier so that they really overlap;
    results in the order of ``bodies``."""
    barrier = threading.Barrier(len(bodies))

    def one(body: dict[str, Any]) -> Any:
        barrier.wait()
        return call(body)

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        return list(pool.map(one, bodies))


def test_forty_simultaneous_emotions_keep_the_history_bounded_and_the_statistics_whole(served, agent):
    assert not TransitionProbability.objects.filter(from_emotion__in=("empathique", *EMOTIONS)).exists()
    imported = {**_document("emotion_history"), "max_history": 10, "current_emotion": "empathique"}
    subjects.import_documents("alice", {"emotion_history": imported}, actor=SYSTEM)
    stats = imported["statistics"]
    imported_counts = {(t["from"], t["to"]): t["count"] for t in imported["transitions"]}
    key = _agent_key(agent)
    url = f"{served}/api/v1/memory/subjects/alice/emotions"
    # Each emotion carries its own moment, a minute apart (the response's timestamp is to the
    # millisecond, too coarse to order forty requests), while the order the server applies them in
    # is the schedule's.
    bodies = [
        {
            "emotion": emotion,
            "intensity": round(0.2 + n / 100, 2),
            "context": f"message {n}",
            "triggered_by": "user_message",
            "timestamp": f"2026-01-01T10:{n:02d}:00Z",
        }
        for n, emotion in enumerate(EMOTIONS)
    ]

    results = _all_at_once(bodies, lambda body: _post(url, key, body))

    assert [status for status, _ in results] == [201] * 40, [body for status, body in results if status != 201]
    subject = Subject.objects.get(key="alice")
    state = EmotionState.objects.get(subject=subject)
    assert state.total_emotions_recorded == stats["total_emotions_recorded"] + 40
    assert state.intensity_sum == pytest.approx(
        stats["avg_intensity_overall"] * stats["total_emotions_recorded"] + sum(b["intensity"] for b in bodies)
    )
    assert all(state.counts[emotion] == 1 for emotion in EMOTIONS)

    # Exactly max_history rows, and they are the ten latest moments, whichever requests came last.
    kept = list(EmotionEvent.objects.filter(subject=subject))
    assert [event.emotion for event in kept] == list(EMOTIONS[-10:])
    assert [event.timestamp for event in kept] == [datetime.fromisoformat(b["timestamp"]) for b in bodies[-10:]]

    # Every emotion was a change: forty new transitions, one each, counted in the statistics...
    rows = {(t.from_emotion, t.to_emotion): t.count for t in EmotionTransition.objects.filter(subject=subject)}
    assert all(rows[pair] == count for pair, count in imported_counts.items())  # the imported ones untouched
    new = {pair: count for pair, count in rows.items() if pair not in imported_counts}
    assert sum(new.values()) == 40 == state.total_transitions - stats["total_transitions"]
    assert set(new.values()) == {1}
    # ... and they chain into one path from the imported emotion through all forty to the current one:
    # each request saw the emotion the previous one left, never a stale one.
    successor = dict(new.keys())  # (from, to) pairs: from -> to
    assert len(successor) == 40  # no emotion was left twice
    path = ["empathique"]
    while path[-1] in successor and len(path) <= 41:
        path.append(successor[path[-1]])
    assert sorted(path[1:]) == sorted(EMOTIONS)
    assert path[-1] == state.current_emotion


def test_thirty_simultaneous_facts_get_the_next_ids_without_gaps_or_duplicates(served, agent):
    subjects.import_documents("alice", {"facts": _document("facts")}, actor=SYSTEM)
    subject = Subject.objects.get(key="alice")
    assert sorted(Preference.objects.filter(subject=subject).values_list("pref_id", flat=True)) == [
        "pref_001",
        "pref_002",
        "pref_003",
    ]
    key = _agent_key(agent)
    url = f"{served}/api/v1/memory/subjects/alice/facts"
    bodies = [
        {
            "kind": "preference",
            "values": {"category": "musique", "item": f"groupe {n}", "sentiment": "positive", "confidence": 0.8},
        }
        for n in range(30)
    ]

    results = _all_at_once(bodies, lambda body: _post(url, key, body))

    assert [status for status, _ in results] == [201] * 30, [body for status, body in results if status != 201]
    expected = [f"pref_{n:03d}" for n in range(4, 34)]
    assert sorted(body["id"] for _, body in results) == expected
    stored = dict(Preference.objects.filter(subject=subject, pref_id__in=expected).values_list("item", "pref_id"))
    assert stored == {body["values"]["item"]: answer["id"] for body, (_, answer) in zip(bodies, results, strict=True)}
    assert sorted(Preference.objects.filter(subject=subject).values_list("pref_id", flat=True)) == [
        f"pref_{n:03d}" for n in range(1, 34)
    ]
    memories = SubjectMemory.objects.filter(subject=subject, type="preference").values_list("key", flat=True)
    assert sorted(memories) == expected  # each fact's searchable text, once
    assert SubjectCounter.objects.get(subject=subject, prefix="pref").last == 33
