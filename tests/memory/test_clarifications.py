"""PO clarifications (seed 004 section 2.2, flow B2): verbatim storage, versions, retrieval, export,
the commands and the API.

Named after the seed's test ids: TC-NOM-03 (the answers are stored byte for byte: SHA-256 in ==
SHA-256 out), TC-NOM-04 (stored answers are indexed and found), TC-NEG-04 (invalid story ids and file
names are refused), TC-ERR-09 (a write that fails stores nothing, says so on stderr, and step 0 goes
on). H-06: a second call for the same story makes a new version, and the newest one is returned.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection

from governance.kernel.exceptions import InvalidInput, NotFound
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory import clarifications
from memory.models import Clarification
from tests.support.manifests import writes_into

T0 = dt.datetime(2025, 6, 1, 10, 15, 0, tzinfo=dt.UTC)

# Non-ASCII (precomposed and decomposed accents, CJK, emoji), trailing spaces, tabs, CRLF, blank
# lines, a leading newline, backticks and Markdown that looks like the file's own headings.
VERBATIM = [
    "Oui, le périmètre est limité au module « scoring ».  \n\nPas d'UI.\n",
    "\nRe\u0301ponse de\u0301compose\u0301e\t— 中文 — 🚀   ",
    "Line one\r\nLine two\r\n\r\n",
    "```python\nprint('x')\n```\n## Q3.\n\n---\n````",
]

pytestmark = pytest.mark.django_db


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def persist(story: str = "PD-295", answers: list[str] | None = None, **kwargs) -> tuple[int, str]:
    params = {"domain": "tooling", "project": "ia-governance", "actor": SYSTEM, "now": T0, **kwargs}
    return clarifications.persist_clarifications(story=story, answers=answers or VERBATIM, **params)


def stored(story: str, version: int) -> list[str]:
    rows = Clarification.objects.filter(story=story, version=version).order_by("question_idx")
    return [row.verbatim for row in rows]


@pytest.fixture
def sent(monkeypatch) -> list[list]:
    """Embedding tasks sent to the broker (the real schedule_embedding, a recording broker)."""
    from controlplane.celery import app

    calls: list[list] = []
    monkeypatch.setattr(app, "send_task", lambda name, args=None, **kw: calls.append([name, *args]))
    return calls


# --- TC-NOM-03: verbatim -------------------------------------------------------------------------


def test_tc_nom_03_answers_are_stored_byte_for_byte():
    version, name = persist()

    assert (version, name) == (1, "PD-295-clarifications.md")
    assert [sha(a) for a in stored("PD-295", 1)] == [sha(a) for a in VERBATIM]
    raw = Clarification.objects.filter(story="PD-295").order_by("question_idx").values_list("verbatim", flat=True)
    assert [a.encode("utf-8") for a in raw] == [a.encode("utf-8") for a in VERBATIM]


def test_tc_nom_03_the_exported_markdown_gives_the_answers_back_byte_for_byte():
    persist()

    text = clarifications.export_clarifications_markdown("PD-295")
    read = clarifications.read_clarifications_markdown(text)

    assert [sha(a) for a in read["answers"]] == [sha(a) for a in VERBATIM]
    assert read["answers_sha256"] == [sha(a) for a in VERBATIM]
    assert (read["story"], read["domain"], read["project"], read["version"]) == (
        "PD-295",
        "tooling",
        "ia-governance",
        1,
    )


def test_tc_nom_03_the_markdown_has_the_seed_shape():
    persist()

    text = clarifications.export_clarifications_markdown("PD-295")

    assert text.startswith("---\nstory: PD-295\ndomain: tooling\nproject: ia-governance\nversion: 1\n")
    assert "\n# PD-295 — Clarifications PO (version 1)\n" in text
    headings = [line for line in text.splitlines() if line.startswith("## Q") and line.endswith(".")]
    assert headings[:1] == ["## Q1."]
    assert text.count("\n## Q4.\n") == 1
    assert "\n`````text\n" + VERBATIM[3] + "\n`````\n" in text  # the fence outgrows the answer's backticks


def test_tc_nom_03_through_the_api_with_raw_utf8_json(agent, agent_api):
    writes_into(agent, "d")
    body = {"story": "PD-7", "domain": "d", "project": "p", "answers": VERBATIM}
    response = agent_api.post("/memory/clarifications", raw=json.dumps(body, ensure_ascii=False).encode("utf-8"))

    assert response.status_code == 201, response.content
    assert response.json() == {"story": "PD-7", "version": 1, "name": "PD-7-clarifications.md"}
    assert [sha(a) for a in stored("PD-7", 1)] == [sha(a) for a in VERBATIM]


def test_tc_nom_03_through_the_command_from_a_file(tmp_path):
    source = tmp_path / "answers.json"
    source.write_bytes(json.dumps(VERBATIM, ensure_ascii=False).encode("utf-8"))
    out = StringIO()

    call_command(
        "persist_clarifications",
        "--story",
        "PD-8",
        "--domain",
        "d",
        "--project",
        "p",
        "--file",
        str(source),
        stdout=out,
    )

    assert out.getvalue().strip() == "PD-8 version 1: PD-8-clarifications.md"
    assert stored("PD-8", 1) == VERBATIM


def test_tc_nom_03_an_exported_file_can_be_persisted_again_verbatim(tmp_path):
    persist()
    exported = tmp_path / "PD-295-clarifications.md"
    out = StringIO()
    call_command("export_clarifications", "--story", "PD-295", stdout=out)
    exported.write_bytes(out.getvalue().encode("utf-8"))

    call_command(
        "persist_clarifications",
        "--story",
        "PD-296",
        "--domain",
        "d",
        "--project",
        "p",
        "--file",
        str(exported),
        stdout=StringIO(),
    )

    assert stored("PD-296", 1) == VERBATIM


def test_the_command_takes_four_answer_options():
    out = StringIO()
    args = ["--story", "PD-9", "--domain", "d", "--project", "p"]

    call_command("persist_clarifications", *args, *[f"--answer=réponse {i}  " for i in range(1, 5)], stdout=out)

    assert stored("PD-9", 1) == [f"réponse {i}  " for i in range(1, 5)]
    with pytest.raises(CommandError, match="exactly 4 answers"):
        call_command("persist_clarifications", *args, "--answer", "a", "--answer", "b", "--answer", "c")
    assert Clarification.objects.filter(story="PD-9").count() == 4


# --- TC-NOM-04: indexed and found ----------------------------------------------------------------


def test_tc_nom_04_one_row_per_answer_embeddings_scheduled_and_found(sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        persist()

    rows = list(Clarification.objects.filter(story="PD-295").order_by("question_idx"))
    assert [(r.question_idx, r.domain, r.project, r.version, r.date) for r in rows] == [
        (i, "tooling", "ia-governance", 1, T0) for i in range(1, 5)
    ]
    assert sent == [["memory.embed", "clarification", [r.pk for r in rows]]]
    found = clarifications.latest_clarifications("tooling", "ia-governance")
    assert [(f["story"], f["version"], f["answers"]) for f in found] == [("PD-295", 1, VERBATIM)]
    event = AuditEvent.objects.get(action="clarifications.persisted")
    assert event.data == {"story": "PD-295", "version": 1, "name": "PD-295-clarifications.md"}


def test_tc_nom_04_the_api_lists_the_newest_first(agent_api, viewer_api):
    for number, hours in ((1, 0), (2, 2), (3, 1), (4, 3)):
        persist(f"PD-{number}", [f"a{number}", "b", "c", "d"], now=T0 + dt.timedelta(hours=hours))
    persist("PD-5", now=T0 + dt.timedelta(hours=9), domain="other")

    response = viewer_api.get("/memory/clarifications", {"domain": "tooling", "project": "ia-governance"})

    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["story"] for item in body["items"]] == ["PD-4", "PD-2", "PD-3"]  # top 3 by date
    assert body["count"] == 4
    assert body["items"][0]["answers"] == ["a4", "b", "c", "d"]
    assert body["items"][0]["date"] == "2025-06-01T13:15:00Z"
    more = agent_api.get(
        "/memory/clarifications", {"domain": "tooling", "project": "ia-governance", "limit": 3, "offset": 3}
    )
    assert [item["story"] for item in more.json()["items"]] == ["PD-1"]


def test_tc_nom_04_filters_are_exact():
    persist("PD-1")
    persist("PD-2", domain="Tooling")
    persist("PD-3", project="ia-governance-2")

    assert [c["story"] for c in clarifications.latest_clarifications("tooling", "ia-governance")] == ["PD-1"]
    assert clarifications.latest_clarifications("tool", "ia-governance") == []
    assert len(clarifications.latest_clarifications(None, None, limit=10)) == 3


# --- H-06: versions ------------------------------------------------------------------------------


def test_h06_a_second_call_makes_a_new_timestamped_version_and_the_newest_is_returned():
    persist(answers=["v1", "b", "c", "d"])

    version, name = persist(answers=["v2", "b", "c", "d"], now=T0 + dt.timedelta(days=1, seconds=7))

    assert (version, name) == (2, "PD-295-clarifications-2025-06-02-101507.md")
    assert Clarification.objects.filter(story="PD-295").count() == 8
    latest = clarifications.latest_clarifications("tooling", "ia-governance")
    assert [(c["version"], c["answers"][0], c["name"]) for c in latest] == [(2, "v2", name)]
    every = clarifications.latest_clarifications("tooling", "ia-governance", all_versions=True)
    assert [c["version"] for c in every] == [2, 1]
    assert "version: 2\n" in clarifications.export_clarifications_markdown("PD-295")
    first = clarifications.export_clarifications_markdown("PD-295", 1)
    assert clarifications.read_clarifications_markdown(first)["answers"][0] == "v1"


def test_h06_same_date_versions_are_ordered_by_version_and_named_apart():
    names = [persist(answers=[f"v{i}", "b", "c", "d"], now=T0 + dt.timedelta(days=1))[1] for i in range(3)]

    assert names == [
        "PD-295-clarifications.md",
        "PD-295-clarifications-2025-06-02-101500.md",
        "PD-295-clarifications-2025-06-02-101500-v3.md",
    ]
    every = clarifications.latest_clarifications(None, None, all_versions=True)
    assert [c["version"] for c in every] == [3, 2, 1]
    assert all(clarifications.parse_clarification_name(name)[0] == "PD-295" for name in names)


def test_h06_the_api_makes_versions_and_lists_all_of_them_on_request(agent, agent_api):
    writes_into(agent, "d")
    body = {"story": "PD-11", "domain": "d", "project": "p", "answers": ["a", "b", "c", "d"]}

    first = agent_api.post("/memory/clarifications", body)
    second = agent_api.post("/memory/clarifications", body)

    assert (first.json()["version"], second.json()["version"]) == (1, 2)
    assert second.json()["name"].startswith("PD-11-clarifications-")
    listed = agent_api.get("/memory/clarifications", {"domain": "d", "project": "p"}).json()
    assert [item["version"] for item in listed["items"]] == [2]
    listed = agent_api.get("/memory/clarifications", {"domain": "d", "project": "p", "all_versions": "true"}).json()
    assert [item["version"] for item in listed["items"]] == [2, 1]


@pytest.mark.django_db(transaction=True)
def test_h06_concurrent_calls_for_one_story_get_distinct_versions():
    callers = 8
    barrier = threading.Barrier(callers)
    results: list[tuple[int, str]] = []
    failures: list[BaseException] = []

    def call(index: int) -> None:
        try:
            barrier.wait()
            results.append(persist("PD-77", [f"caller {index}", "b", "c", "d"], now=None))
        except BaseException as exc:  # reported below; a thread must not die silently
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    assert sorted(version for version, _ in results) == list(range(1, callers + 1))
    assert len({name for _, name in results}) == callers
    assert Clarification.objects.filter(story="PD-77").count() == 4 * callers
    by_version = {
        c["version"]: c["date"] for c in clarifications.latest_clarifications(None, None, limit=50, all_versions=True)
    }
    assert [by_version[v] for v in sorted(by_version)] == sorted(by_version.values())  # later version, later date


# --- TC-NEG-04: invalid story ids and names ------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "PD-295-clarifications.md",
        "PD-295-clarifications-2025-06-02-101507.md",
        "PD-295-clarifications-2025-06-02-101507-v3.md",
        "ABC2-1-clarifications.md",
    ],
)
def test_tc_neg_04_valid_file_names_are_read(name):
    story, _ = clarifications.parse_clarification_name(name)
    assert story == name.split("-clarifications")[0]


def test_tc_neg_04_a_timestamped_name_gives_its_utc_time():
    assert clarifications.parse_clarification_name("PD-1-clarifications-2025-06-02-101507.md") == (
        "PD-1",
        dt.datetime(2025, 6, 2, 10, 15, 7, tzinfo=dt.UTC),
    )


@pytest.mark.parametrize(
    "name",
    [
        "pd-295-clarifications.md",
        "PD-295-clarification.md",
        "PD-295-clarifications.txt",
        "PD-295-clarifications-2025-06-02.md",
        "PD-295-clarifications-2025-13-02-101507.md",
        "PD-295-clarifications-2025-06-02-256199.md",
        "PD-295-clarifications-2025-06-02-101507-v0.md",
        "../PD-295-clarifications.md",
        "PD-clarifications.md",
        "PD-295-clarifications.md.bak",
        "",
    ],
)
def test_tc_neg_04_invalid_file_names_are_refused(name):
    with pytest.raises(ValueError, match=r"clarification file name|impossible timestamp"):
        clarifications.parse_clarification_name(name)


@pytest.mark.parametrize(
    ("changes", "loc"),
    [
        ({"story": "pd-295"}, ["body", "story"]),
        ({"story": "PD-295/../../etc"}, ["body", "story"]),
        ({"story": "PD-"}, ["body", "story"]),
        ({"story": ""}, ["body", "story"]),
        ({"domain": "  "}, ["body", "domain"]),
        ({"project": "p" * 101}, ["body", "project"]),
        ({"project": "a\nb"}, ["body", "project"]),
        ({"answers": ["a", "b", "c"]}, ["body", "answers"]),
        ({"answers": ["a", "b", "c", "d", "e"]}, ["body", "answers"]),
        ({"answers": ["a", "b", " \n ", "d"]}, ["body", "answers", 2]),
        ({"answers": ["a", "b", "c", "nul\x00"]}, ["body", "answers", 3]),
        ({"answers": ["a", "\ud800", "c", "d"]}, ["body", "answers", 1]),
        ({"answers": ["a", 2, "c", "d"]}, ["body", "answers", 1]),
    ],
)
def test_tc_neg_04_invalid_input_is_refused_and_nothing_is_written(changes, loc):
    params = {"story": "PD-295", "domain": "tooling", "project": "p", "answers": ["a", "b", "c", "d"], **changes}

    with pytest.raises(InvalidInput) as caught:
        clarifications.persist_clarifications(**params, actor=SYSTEM)

    assert loc in [error["loc"] for error in caught.value.errors]
    assert not Clarification.objects.exists()


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"story": "PD-1", "domain": "d", "project": "p", "answers": ["a", "b", "c"]}, ["body", "answers"]),
        ({"story": "PD-1", "domain": "d", "project": "p", "answers": ["a", "b", "c", 4]}, ["body", "answers", 3]),
        ({"story": "nope", "domain": "d", "project": "p", "answers": ["a", "b", "c", "d"]}, ["body", "story"]),
        ({"domain": "d", "project": "p", "answers": ["a", "b", "c", "d"]}, ["body", "story"]),
        ({"story": "PD-1", "domain": "d", "answers": ["a", "b", "c", "d"]}, ["body", "project"]),
    ],
)
def test_tc_neg_04_the_api_answers_422_with_the_field_and_writes_nothing(agent_api, body, loc):
    response = agent_api.post("/memory/clarifications", body)

    assert response.status_code == 422, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert loc in [error["loc"] for error in response.json()["errors"]]
    assert not Clarification.objects.exists()


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"offset": -1}, {"limit": "x"}])
def test_bad_list_parameters_are_422(agent_api, params):
    response = agent_api.get("/memory/clarifications", params)

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"][0] == "query"


# --- TC-ERR-09: a failed write -------------------------------------------------------------------


@pytest.fixture
def failing_write(monkeypatch):
    """The database refuses the transaction after the rows were inserted (disk full, say)."""

    def refuse(kind, ids):
        raise DatabaseError("could not extend file: No space left on device")

    monkeypatch.setattr(clarifications, "schedule_embedding", refuse)


@pytest.mark.usefixtures("failing_write")
def test_tc_err_09_a_failed_write_stores_nothing_and_is_logged(caplog):
    with (
        caplog.at_level(logging.ERROR, logger="memory.clarifications"),
        pytest.raises(clarifications.ClarificationWriteFailed),
    ):
        persist()

    assert not Clarification.objects.exists()
    assert not AuditEvent.objects.filter(action="clarifications.persisted").exists()
    assert caplog.records[-1].getMessage() == (
        "[clarifications] write failed: PD-295-clarifications.md: could not extend file: No space left on device"
    )


@pytest.mark.usefixtures("failing_write")
def test_tc_err_09_the_command_reports_on_stderr_and_step_0_goes_on():
    out, err = StringIO(), StringIO()

    call_command(
        "persist_clarifications",
        "--story",
        "PD-1",
        "--domain",
        "d",
        "--project",
        "p",
        *["--answer=x"] * 4,
        stdout=out,
        stderr=err,
    )

    assert out.getvalue() == ""
    assert err.getvalue().startswith("[clarifications] write failed: The clarifications of PD-1 could not be stored")
    assert not Clarification.objects.exists()


@pytest.mark.usefixtures("failing_write")
def test_tc_err_09_the_api_answers_503_and_writes_nothing(agent, agent_api):
    writes_into(agent, "d")
    body = {"story": "PD-1", "domain": "d", "project": "p", "answers": ["a", "b", "c", "d"]}

    response = agent_api.post("/memory/clarifications", body)

    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/problem+json")
    assert not Clarification.objects.exists()


# --- export ---------------------------------------------------------------------------------------


def test_export_of_an_unknown_story_or_version_is_not_found():
    persist()

    with pytest.raises(NotFound):
        clarifications.export_clarifications_markdown("PD-404")
    with pytest.raises(NotFound):
        clarifications.export_clarifications_markdown("PD-295", 2)
    with pytest.raises(CommandError, match="No clarifications for version 2 of PD-295"):
        call_command("export_clarifications", "--story", "PD-295", "--version", "2")


def test_the_export_command_prints_a_chosen_version():
    persist(answers=["first", "b", "c", "d"])
    persist(answers=["second", "b", "c", "d"], now=T0 + dt.timedelta(hours=1))
    out = StringIO()

    call_command("export_clarifications", "--story", "PD-295", "--version", "1", stdout=out)

    assert clarifications.read_clarifications_markdown(out.getvalue())["answers"][0] == "first"


def test_the_markdown_endpoint(agent_api, viewer_api):
    persist()

    response = viewer_api.get("/memory/clarifications/PD-295/markdown")
    missing = agent_api.get("/memory/clarifications/PD-404/markdown")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert clarifications.read_clarifications_markdown(response.content.decode("utf-8"))["answers"] == VERBATIM
    assert missing.status_code == 404


# --- who may do what -----------------------------------------------------------------------------


def test_who_may_post_clarifications(admin_api, viewer_api, outsider_api, anonymous_api):
    body = {"story": "PD-1", "domain": "d", "project": "p", "answers": ["a", "b", "c", "d"]}

    assert viewer_api.post("/memory/clarifications", body).status_code == 403
    assert outsider_api.post("/memory/clarifications", body).status_code == 403
    assert anonymous_api.post("/memory/clarifications", body).status_code == 401
    assert not Clarification.objects.exists()
    assert admin_api.post("/memory/clarifications", body).status_code == 201


def test_who_may_read_clarifications(agent_api, viewer_api, outsider_api, anonymous_api):
    persist()

    assert agent_api.get("/memory/clarifications").status_code == 200
    assert viewer_api.get("/memory/clarifications").status_code == 200
    assert outsider_api.get("/memory/clarifications").status_code == 403
    assert outsider_api.get("/memory/clarifications/PD-295/markdown").status_code == 403
    assert anonymous_api.get("/memory/clarifications").status_code == 401
