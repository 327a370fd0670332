"""The commands around reuse scores and vectors: import_gate_results (past verdicts at their own
times, all or nothing, idempotent), export_reuse_scores (the scores as JSONL) and reembed (every
row of a kind given a vector of one model, resumable), the last with the real local model."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from governance.kernel.models import AuditEvent
from governance.kernel.principals import Principal
from memory import indexing, privacy, scoring, search
from memory.embeddings import EmbeddingError, get_backend
from memory.models import Embedding, GateResult, Learning, ReuseScore
from memory.transfer import SCORE_FIELDS
from tests.factories.memory import LearningFactory, LearningInjectionFactory

pytestmark = pytest.mark.django_db

INJECTED = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def run(*args: Any) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def write(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def verdict(story: str, at: str, gate: int = 8, value: str = "GO") -> dict[str, Any]:
    return {"story": story, "gate": gate, "verdict": value, "at": at}


@pytest.fixture
def injected() -> Learning:
    """A learning injected into PD-20 on 1 March: 0.4 + 0.2 until PD-20 passes gate 8 after that."""
    learning = LearningFactory.create(story="PD-1", gate=3, domain="seo", tags=["#api"])
    LearningInjectionFactory(learning=learning, story="PD-20", domain="seo", at=INJECTED)
    scoring.compute_reuse_scores(full=True)
    return learning


def score(learning: Learning) -> ReuseScore:
    return ReuseScore.objects.get(story=learning.story, gate=learning.gate, tags_hash=learning.tags_hash)


# --- import_gate_results ---------------------------------------------------------------------------


def test_an_imported_gate_8_go_keeps_its_time_and_counts_after_a_full_run(injected, tmp_path):
    path = write(
        tmp_path / "gates.jsonl",
        verdict("PD-20", "2026-03-02T10:00:00Z"),
        verdict("PD-20", "2026-02-01T10:00:00Z"),  # before the injection: no gate-8 term for it
        verdict("PD-21", "2026-03-05T10:00:00", gate=5, value="NO_GO"),
    )
    assert score(injected).reuse_score == Decimal("0.6")

    out, _ = run("import_gate_results", str(path))
    scoring.compute_reuse_scores(full=True)

    assert "3 line(s), created 3, skipped 0" in out
    assert GateResult.objects.filter(story="PD-20", gate=8, verdict="GO").count() == 2
    assert set(GateResult.objects.values_list("at", flat=True)) == {
        datetime(2026, 3, 2, 10, tzinfo=UTC),
        datetime(2026, 2, 1, 10, tzinfo=UTC),
        datetime(2026, 3, 5, 10, tzinfo=UTC),
    }
    assert (score(injected).nb_stories_gate8_go, score(injected).reuse_score) == (1, Decimal("1.0"))
    assert AuditEvent.objects.filter(action="gate_results.imported", data__created=3).count() == 1


def test_an_incremental_run_sees_the_imported_results_too(injected, tmp_path):
    run("import_gate_results", str(write(tmp_path / "gates.jsonl", verdict("PD-20", "2026-03-02T10:00:00+00:00"))))

    scoring.compute_reuse_scores()

    assert score(injected).reuse_score == Decimal("1.0")


def test_importing_the_same_file_again_adds_nothing(injected, tmp_path):
    line = verdict("PD-20", "2026-03-02T10:00:00.123456Z")
    path = write(tmp_path / "gates.jsonl", line, line)
    first, _ = run("import_gate_results", str(path))

    again, _ = run("import_gate_results", str(path))

    assert "created 1, skipped 1" in first
    assert "created 0, skipped 2" in again
    assert GateResult.objects.count() == 1


def test_a_file_with_bad_lines_names_each_and_imports_nothing(injected, tmp_path):
    path = write(
        tmp_path / "gates.jsonl",
        verdict("PD-20", "2026-03-02T10:00:00Z"),
        "{not json",
        verdict("PD-20", "2026-03-02T10:00:00Z", value="MAYBE"),
        "",
        {"story": "PD-20", "gate": 8, "verdict": "GO"},
        verdict("PD-20", "yesterday"),
        verdict("PD-20", "2026-03-02T10:00:00Z", gate=100),
    )

    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match=re.escape("5 bad line(s) in gates.jsonl: nothing imported")):
        call_command("import_gate_results", str(path), stdout=out, stderr=err)

    assert re.findall(r"line (\d+):", err.getvalue()) == ["2", "3", "5", "6", "7"]
    assert "field 'verdict' must be one of GO, NO_GO, got 'MAYBE'" in err.getvalue()
    assert "missing field(s): at" in err.getvalue()
    assert not GateResult.objects.exists()


def test_a_missing_file_fails_the_command(tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        run("import_gate_results", str(tmp_path / "absent.jsonl"))


# --- export_reuse_scores ---------------------------------------------------------------------------


@pytest.fixture
def scored(injected) -> list[Learning]:
    other = LearningFactory.create(story="PD-2", gate=4, domain="rag", tags=["#db"])
    for story in ("PD-30", "PD-31", "PD-32"):
        LearningInjectionFactory(learning=other, story=story, domain="rag", at=INJECTED)
    GateResult.objects.create(story="PD-31", gate=8, verdict="GO", at=datetime(2026, 3, 9, tzinfo=UTC))
    scoring.compute_reuse_scores(full=True)
    return [injected, other]


def exported(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def as_stored(line: dict[str, Any]) -> tuple:
    key = (line["story"], line["gate"], line["tags_hash"])
    return (
        *key,
        line["nb_injections"],
        line["nb_stories_gate8_go"],
        line["nb_domains"],
        Decimal(str(line["reuse_score"])),
    )


def test_the_export_round_trips_to_the_numbers_in_the_database(scored):
    out, _ = run("export_reuse_scores")

    stored = ReuseScore.objects.order_by("story").values_list(*SCORE_FIELDS)
    assert [as_stored(line) for line in exported(out)] == list(stored)
    assert [line["reuse_score"] for line in exported(out)] == [0.6, 1.8]


def test_the_export_to_a_file_and_its_filters(scored, tmp_path):
    target = tmp_path / "scores.jsonl"

    _, err = run("export_reuse_scores", "--output", str(target), "--domain", "rag")
    by_story, _ = run("export_reuse_scores", "--story", "PD-1")

    assert "1 score(s)" in err
    assert [line["story"] for line in exported(target.read_text())] == ["PD-2"]
    assert [line["story"] for line in exported(by_story)] == ["PD-1"]


# --- reembed ---------------------------------------------------------------------------------------

MINILM = "all-MiniLM-L6-v2"
TEXTS = [
    "Retry a flaky deploy once before paging anyone",
    "Canonical URLs must point to the first page of a listing",
    "Chunk long documents on their headings before embedding them",
    "Rotate API keys every ninety days and revoke the old ones",
    "Cache the sitemap for an hour to spare the crawler",
]


@pytest.fixture
def old_model_rows(settings) -> list[Learning]:
    """Learnings embedded with another model only (the hashing test model), one of them redacted."""
    settings.DEBUG = True
    old = get_backend("hashing", model="old-model", dimension=64)
    rows = [LearningFactory.create(text=text) for text in TEXTS]
    indexing.embed("learning", [row.pk for row in rows], backend=old)
    settings.EMBEDDING_BACKEND = "local"
    return rows


def test_reembed_gives_every_row_a_vector_of_the_model_and_search_finds_them(old_model_rows, admin_operator):
    out, _ = run("reembed", "--kind", "learning", "--model", MINILM, "--batch-size", "2")

    assert re.findall(r"\[reembed\] learning (\d+)/5 rows, [\d.]+ rows/s", out) == ["2", "4", "5"]
    assert "5 row(s) embedded" in out
    vectors = Embedding.objects.filter(kind="learning", model=MINILM)
    assert sorted(vectors.values_list("object_id", flat=True)) == sorted(row.pk for row in old_model_rows)
    assert set(vectors.values_list("dimension", flat=True)) == {384}
    hits = search.search_memory(Principal(user=admin_operator), q="the deploy is flaky, retry it", k=1)
    assert hits[0]["text"] == TEXTS[0]

    again, _ = run("reembed", "--kind", "learning", "--model", MINILM)

    assert "0 row(s) embedded" in again


def test_a_stopped_reembed_goes_on_where_it_stopped_and_skips_no_row(old_model_rows):
    local = get_backend()
    calls: list[int] = []

    class Interrupted:
        """The local model, failing on its second batch as a killed or crashed run would."""

        model, dimension = local.model, local.dimension

        def embed(self, texts: list[str]) -> list[list[float]]:
            calls.append(len(texts))
            if len(calls) == 2:
                raise EmbeddingError("interrupted")
            return local.embed(texts)

    with pytest.raises(EmbeddingError):
        indexing.reembed("learning", backend=Interrupted(), batch_size=2)
    assert Embedding.objects.filter(kind="learning", model=MINILM).count() == 2
    progress: list[tuple[int, int]] = []

    done = indexing.reembed("learning", backend=local, batch_size=2, progress=lambda *p: progress.append(p))

    assert (done, progress) == (3, [(2, 3), (3, 3)])
    assert Embedding.objects.filter(kind="learning", model=MINILM).count() == 5


def test_reembed_leaves_redacted_rows_without_a_vector(old_model_rows, admin_operator):
    privacy.redact("learning", old_model_rows[0].pk, actor=Principal(user=admin_operator))

    out, _ = run("reembed", "--kind", "learning", "--model", MINILM)

    assert "4 row(s) embedded" in out
    assert not Embedding.objects.filter(object_id=old_model_rows[0].pk, kind="learning").exists()


def test_reembed_refuses_a_model_the_backend_does_not_serve(old_model_rows):
    with pytest.raises(CommandError, match="only ships 'all-MiniLM-L6-v2', not 'nomic-embed-text'"):
        run("reembed", "--kind", "learning", "--model", "nomic-embed-text")
    assert not Embedding.objects.exclude(model="old-model").exists()
