"""The memory commands: import_learnings, export_learnings, inject and search_memory.

The commands are thin edges over memory.transfer, memory.injection and memory.search; these tests
check what an operator or the step-0 script sees: stdout, stderr and the exit status. Seed 004 ids:
TC-ERR-01 (rejected lines on stderr with their number), TC-ERR-03 (missing injections file),
TC-NOM-08 (a second import adds nothing), TC-NOM-12/13 (three sections, `_aucun résultat_`),
TC-NOM-14 (a failing source degrades its section, exit 0).
"""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from governance.kernel.principals import SYSTEM
from memory import clarifications, indexing, transfer
from memory.embeddings import get_backend
from memory.injection import NO_RESULT, UNAVAILABLE, build_block
from memory.models import Learning, LearningInjection
from memory.tags import compute_tags_hash
from tests.factories.memory import LearningFactory, VeilleNoteFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def hashing(settings):
    """The test-only hashing backend, for the commands (which call get_backend()) and for the rows:
    `get_backend` allows it only with DEBUG on."""
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64
    return get_backend()


def run(*args: Any, **options: Any) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def entry(text: str, **overrides: Any) -> dict[str, Any]:
    tags = overrides.pop("tags", ["#deploy"])
    values = {
        "story": "PD-1",
        "gate": 3,
        "domain": "tooling",
        "project": "gov",
        "tags": tags,
        "tags_hash": compute_tags_hash(tags),
        "text": text,
    }
    values.update(overrides)
    return values


def write(path: Path, *items: dict[str, Any] | str) -> Path:
    path.write_text("".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items), encoding="utf-8")
    return path


def learning(text: str, backend, **fields: Any) -> Learning:
    item = LearningFactory.create(text=text, **({"tags": ["#deploy"]} | fields))
    indexing.embed("learning", [item.pk], backend=backend)
    return item


# --- import_learnings / export_learnings -----------------------------------------------------------


def test_import_prints_counts_and_a_second_run_adds_nothing(tmp_path):
    path = write(tmp_path / "learnings.jsonl", entry("one"), entry("two", scope="domain"))

    out, err = run("import_learnings", str(path))
    again, _ = run("import_learnings", str(path))

    assert out == (
        "[import] learnings.jsonl: 2 line(s), created 2, skipped 0 (already there), rejected 0, "
        f"tags_hash corrected 0, scope migrated to story 1 ({_seconds(out)} s)\n"
    )
    assert err == ""
    assert "created 0, skipped 2 (already there)" in again
    assert Learning.objects.count() == 2


def _seconds(out: str) -> str:
    return re.search(r"\((\d+\.\d\d) s\)", out).group(1)


def test_tc_err_01_rejected_lines_go_to_stderr_with_their_number(tmp_path):
    path = write(tmp_path / "learnings.jsonl", entry("good"), "{oops", entry("no gate", gate=None), entry("fine"))

    out, err = run("import_learnings", str(path))

    assert err.splitlines() == [
        "[import] rejected: line 2: invalid JSON: Expecting property name enclosed in double quotes at column 2",
        "[import] rejected: line 3: missing field(s): gate",
    ]
    assert "created 2" in out
    assert "rejected 2" in out
    assert sorted(Learning.objects.values_list("text", flat=True)) == ["fine", "good"]


def test_tc_err_03_a_missing_injections_file_is_a_note_not_a_failure(tmp_path):
    path = write(tmp_path / "learnings.jsonl", entry("one"))
    missing = tmp_path / "learnings-injections.jsonl"

    out, err = run("import_learnings", str(path), "--injections", str(missing))

    assert err == f"[import] injections corpus empty: {missing} not found\n"
    assert out.splitlines()[1] == "[import] learnings-injections.jsonl: not found, nothing imported"
    assert Learning.objects.count() == 1


def test_import_with_archive_and_injections(tmp_path):
    learnings = write(tmp_path / "learnings.jsonl", entry("live"))
    archive = write(tmp_path / "learnings-archive.jsonl", entry("old", story="PD-0"))
    injections = write(
        tmp_path / "learnings-injections.jsonl",
        {
            "story": "PD-1",
            "gate": 3,
            "tags_hash": compute_tags_hash(["#deploy"]),
            "injected_into": "PD-7",
            "domain": "web",
            "injected_at": "2026-04-01T10:00:00Z",
        },
    )

    out, _ = run("import_learnings", str(learnings), "--archive", str(archive), "--injections", str(injections))

    assert [line.split(":")[0] for line in out.splitlines()] == [
        "[import] learnings.jsonl",
        "[import] learnings-archive.jsonl",
        "[import] learnings-injections.jsonl",
    ]
    assert Learning.objects.get(text="old").scope == "archived"
    assert LearningInjection.objects.get().learning.text == "live"


class Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_a_progress_counter_and_messages_on_their_own_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "PROGRESS_EVERY", 2)
    path = write(tmp_path / "learnings.jsonl", entry("a"), entry("b"), "{bad", entry("c"), entry("d"))
    err = Terminal()

    call_command("import_learnings", str(path), stdout=StringIO(), stderr=err, no_color=True)

    assert err.getvalue() == (
        "\r[import] learnings.jsonl: 2 lines\n"
        "[import] rejected: line 3: invalid JSON: Expecting property name enclosed in double quotes at column 2\n"
        "\r[import] learnings.jsonl: 4 lines\r[import] learnings.jsonl: 5 lines\n"
    )


def test_no_progress_counter_without_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "PROGRESS_EVERY", 1)
    _, err = run("import_learnings", str(write(tmp_path / "learnings.jsonl", entry("a"), entry("b"))))
    assert err == ""


def test_a_missing_learnings_file_fails_the_command(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        run("import_learnings", str(tmp_path / "nope.jsonl"))


def test_export_writes_the_three_files(tmp_path):
    run("import_learnings", str(write(tmp_path / "in.jsonl", entry("live"), entry("gone", scope="archived"))))

    out, _ = run("export_learnings", "--out", str(tmp_path / "out"))

    assert out == f"[export] {tmp_path / 'out'}: 1 learning(s), 1 archived, 0 injection(s)\n"
    assert json.loads((tmp_path / "out" / "learnings.jsonl").read_text())["text"] == "live"
    assert json.loads((tmp_path / "out" / "learnings-archive.jsonl").read_text())["text"] == "gone"
    assert (tmp_path / "out" / "learnings-injections.jsonl").read_text() == ""


# --- inject ----------------------------------------------------------------------------------------


def test_tc_nom_12_inject_prints_exactly_the_block_markdown(hashing):
    learning("retry the flaky deploy once", hashing)
    note = VeilleNoteFactory(title="Deploy retries", impact_pv="fort", summary="retry the flaky deploy")
    indexing.embed("veille", [note.pk], backend=hashing)
    clarifications.persist_clarifications(
        story="PD-5", domain="tooling", project="gov", answers=["a", "b", "c", "d"], actor=SYSTEM
    )
    args = {"story": "PD-9", "domain": "tooling", "project": "gov", "query_text": "retry the flaky deploy"}

    out, err = run(
        "inject", "--story", "PD-9", "--domain", "tooling", "--project", "gov", "--query-text", "retry the flaky deploy"
    )

    assert out == build_block(actor=SYSTEM, **args)["markdown"]
    assert [line for line in out.splitlines() if line.startswith("## ")] == [
        "## Learnings",
        "## Veille",
        "## Clarifications",
    ]
    assert "retry the flaky deploy once" in out
    assert "**Deploy retries**" in out
    assert "PD-5 (v1" in out
    assert err == ""
    assert LearningInjection.objects.filter(story="PD-9").count() == 2  # the command's block and ours


def test_inject_dry_run_previews_the_same_block_and_records_no_injection(hashing):
    learning("retry the flaky deploy once", hashing)
    arguments = ("--story", "PD-9", "--domain", "tooling", "--project", "gov", "--query-text", "retry the flaky deploy")

    preview, _ = run("inject", *arguments, "--dry-run")
    assert not LearningInjection.objects.exists()  # a preview counts as nobody's reuse
    served, _ = run("inject", *arguments)

    assert preview == served
    assert "retry the flaky deploy once" in preview
    assert LearningInjection.objects.filter(story="PD-9").count() == 1


def test_tc_nom_13_inject_says_no_result_for_empty_sections(hashing):
    out, _ = run("inject", "--story", "PD-9", "--domain", "d", "--project", "p", "--query-text", "anything")
    assert out == f"## Learnings\n\n{NO_RESULT}\n\n## Veille\n\n{NO_RESULT}\n\n## Clarifications\n\n{NO_RESULT}\n"


def test_tc_nom_14_inject_exits_0_when_the_embedding_backend_is_down(settings):
    settings.EMBEDDING_BACKEND = "ollama"
    settings.EMBEDDING_URL = "http://127.0.0.1:9"  # nothing listens: connection refused at once
    settings.EMBEDDING_TIMEOUT_SECONDS = 2
    clarifications.persist_clarifications(
        story="PD-5", domain="tooling", project="gov", answers=["a", "b", "c", "d"], actor=SYSTEM
    )

    out, _ = run("inject", "--story", "PD-9", "--domain", "tooling", "--project", "gov", "--query-text", "q")

    sections = out.split("## ")[1:]
    assert sections[0] == f"Learnings\n\n{UNAVAILABLE}\n\n"
    assert sections[1] == f"Veille\n\n{UNAVAILABLE}\n\n"
    assert sections[2].startswith("Clarifications\n\n- PD-5 (v1")


# --- search_memory ---------------------------------------------------------------------------------


def hits(out: str) -> list[tuple[int, float, str]]:
    """(rank, score, kind:id) of each printed hit."""
    found = re.findall(r"^\s*(\d+)\. (\d\.\d{4})  (\w+:\d+)  ", out, flags=re.MULTILINE)
    return [(int(rank), float(score), ref) for rank, score, ref in found]


def test_search_memory_prints_hits_best_first_with_their_scores(hashing):
    far = learning("gardening tips for tomatoes", hashing)
    exact = learning("retry the flaky deploy", hashing)
    close = learning("retry deploy later", hashing, story="PD-2")

    out, _ = run("search_memory", "retry the flaky deploy", "-k", "3")

    printed = hits(out)
    assert [ref for _, _, ref in printed] == [f"learning:{exact.pk}", f"learning:{close.pk}", f"learning:{far.pk}"]
    assert [rank for rank, _, _ in printed] == [1, 2, 3]
    scores = [score for _, score, _ in printed]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(1.0, abs=1e-4)
    assert "PD-1 gate 3  retry the flaky deploy" in out


def test_search_memory_filters(hashing):
    learning("retry the flaky deploy", hashing, domain="web")
    kept = learning("retry the flaky deploy again", hashing, domain="tooling")
    weak = VeilleNoteFactory(
        title="weak", verdict_veille="signal", impact_pv="faible", summary="retry the flaky deploy"
    )
    strong = VeilleNoteFactory(title="strong", verdict_veille="veille", impact_pv="fort", summary="deploy")
    indexing.embed("veille", [weak.pk, strong.pk], backend=hashing)

    by_domain, _ = run("search_memory", "retry the flaky deploy", "--domain", "tooling")
    by_impact, _ = run("search_memory", "retry the flaky deploy", "--kind", "veille", "--impact", "fort")
    by_verdict, _ = run("search_memory", "retry the flaky deploy", "--kind", "veille", "--verdict", "signal")

    assert [ref for _, _, ref in hits(by_domain)] == [f"learning:{kept.pk}"]
    assert [ref for _, _, ref in hits(by_impact)] == [f"veille:{strong.pk}"]
    assert [ref for _, _, ref in hits(by_verdict)] == [f"veille:{weak.pk}"]


def test_search_memory_clarifications_and_no_results(hashing):
    clarifications.persist_clarifications(
        story="PD-5", domain="tooling", project="gov", answers=["retry the flaky deploy", "b", "c", "d"], actor=SYSTEM
    )
    indexing.embed("clarification", indexing.missing("clarification", hashing.model), backend=hashing)

    out, _ = run("search_memory", "retry the flaky deploy", "--kind", "clarification", "-k", "1")
    empty, _ = run("search_memory", "anything", "--kind", "veille")

    assert re.search(r"^ 1\. 1\.0000  clarification:\d+  PD-5 Q1  retry the flaky deploy$", out, flags=re.MULTILINE)
    assert empty == "no results\n"


def test_search_memory_refuses_a_filter_of_another_kind(hashing):
    with pytest.raises(CommandError, match="--impact do\\(es\\) not apply to --kind learning"):
        run("search_memory", "q", "--impact", "fort")
