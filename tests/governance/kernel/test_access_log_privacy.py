"""The web server's logs name no person and keep no search text (issue 34, point 6): access lines
drop query strings, and subject routes show ``{subject}`` where the key was, in gunicorn's access
log (text and JSON) and in the line the plane writes for an error answer."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from governance.kernel.logs import loggable_path, loggable_url
from memory.models import Subject
from tests.support.processes import gunicorn

SECRET = "zanzibar-quokka"  # in query strings and a subject key; must appear in no log line


def test_loggable_paths_drop_the_query_and_the_subject_key():
    assert loggable_path("/api/v1/memory/subjects/alice/search?q=jazz") == "/api/v1/memory/subjects/{subject}/search"
    assert loggable_path("/memory/subjects/alice/") == "/memory/subjects/{subject}/"
    assert loggable_path("/memory/subjects/") == "/memory/subjects/"
    assert loggable_path("/api/v1/memory/subjects/alice") == "/api/v1/memory/subjects/{subject}"
    assert loggable_path("/api/v1/learnings?q=secret") == "/api/v1/learnings"
    assert loggable_url("https://plane.example/memory/subjects/bob/?q=x#top") == (
        "https://plane.example/memory/subjects/{subject}/"
    )
    assert loggable_url("-") == "-"


def _get(url: str, **headers: str) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_access_lines_keep_no_query_string_and_no_subject_key(transactional_db, tmp_path, log_format):
    Subject.objects.create(key=SECRET)
    with gunicorn(
        tmp_path, workers=1, threads=2, options=("--config", "python:controlplane.gunicorn_conf"), LOG_FORMAT=log_format
    ) as base:
        referer = f"{base}/memory/subjects/{SECRET}/?q={SECRET}"
        statuses = [
            _get(f"{base}/api/v1/memory/subjects/{SECRET}/search?q={SECRET}", Referer=referer),  # 401: no key
            _get(f"{base}/api/v1/memory/subjects/{SECRET}-gone/export"),
            _get(f"{base}/memory/subjects/{SECRET}/?q={SECRET}", Referer=referer),  # to the login page
            _get(f"{base}/api/v1/health?probe={SECRET}"),
        ]
    log = (tmp_path / "gunicorn.log").read_text()
    assert statuses[0] in {401, 403}, statuses
    assert statuses[3] == 200, statuses
    assert "/api/v1/memory/subjects/{subject}/search" in log
    assert "/memory/subjects/{subject}/" in log
    assert "/api/v1/health" in log
    assert SECRET not in log
