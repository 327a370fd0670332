"""Pooled clients keep a connection open between requests; the web server must keep it open
longer than they wait, or a request sent as the server closes the connection fails (gunicorn's
own default is 2 s: a client pausing 2 s between POSTs failed 4 times in 50)."""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

import pytest

from tests.support.processes import gunicorn

pytestmark = pytest.mark.process


def test_a_connection_idle_between_requests_is_kept_open(transactional_db, tmp_path):
    with gunicorn(tmp_path, options=("--config", "python:controlplane.gunicorn_conf")) as base:
        parts = urlsplit(base)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        answers = []
        for _ in range(3):
            connection.request("GET", "/api/v1/health")
            response = connection.getresponse()
            response.read()
            answers.append(response.status)
            time.sleep(3)  # longer than gunicorn's default keep-alive: a closed connection raises here
        connection.close()

    assert answers == [200, 200, 200]
