"""Fixtures shared by the whole suite: people, agents, their keys, and an API client."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from gateway import outcomes
from tests.factories.agents import AgentFactory
from tests.factories.governance import UserFactory
from tests.support.api import Api
from tests.support.hosted import model_server  # noqa: F401  (a fixture: the fake model, for every hosted test)
from tests.support.keys import issue_key
from tests.support.manifests import load

TEST_QUEUE = f"pytest-{os.getpid()}"


def pytest_configure(config: pytest.Config) -> None:
    """Tasks the code under test hands to Celery go to a queue of this run's own: a developer's
    `make run` worker on the same Redis must never receive ids from the test database. Tests that
    start real workers point both sides at their own queue."""
    from controlplane.celery import app
    from governance.kernel import runtime

    # This run's metric files in a folder of its own, never in a developer's var/metrics: the
    # process opens its files at its first labelled value (every instrument has labels), after this.
    settings.METRICS_DIR = Path(tempfile.mkdtemp(prefix="pytest-metrics-"))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(settings.METRICS_DIR)
    runtime.prepare()  # the embedded database (settings start nothing on import)
    app.conf.task_default_queue = TEST_QUEUE


def _purge_test_queue() -> None:
    from controlplane.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(TEST_QUEUE)
    except Exception:  # no broker, or the queue was never declared: nothing to purge
        pass


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Drop what this run queued, and stop the embedded PostgreSQL if this run started it (a
    `make run` may share it)."""
    from governance.kernel import runtime

    _purge_test_queue()
    shutil.rmtree(settings.METRICS_DIR, ignore_errors=True)
    runtime.release()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """A test database of this run's own: two runs on one machine (a developer's and an editor's,
    say) would otherwise create and drop the same `test_governance` under each other."""
    database = settings.DATABASES["default"]
    database.setdefault("TEST", {})["NAME"] = f"test_{database['NAME']}_{os.getpid()}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """The outcomes of a test's governed calls (gateway/outcomes.py) are written once it ends,
    before its teardown empties the database."""
    yield
    outcomes.WRITER.flush()


@pytest.fixture(autouse=True)
def _outcome_writer_disconnected() -> Iterator[None]:
    """The outcome writer lets its database connection go after each test: a test database is
    dropped only once nobody is connected. Nothing to do when the test made no governed call."""
    yield
    outcomes.WRITER.stop()


@pytest.fixture
def agent(db):
    return AgentFactory(agent_id="agent.seo.vlevel")


@pytest.fixture
def other_agent(db):
    return AgentFactory(agent_id="agent.rag.indexer")


@pytest.fixture
def admin_operator(db):
    return UserFactory(username="alice", roles=["Admin"])


@pytest.fixture
def reviewer(db):
    return UserFactory(username="rita", roles=["Reviewer"])


@pytest.fixture
def viewer(db):
    return UserFactory(username="victor", roles=["Viewer"])


@pytest.fixture
def staff_admin(db):
    """alice as an Admin who may also sign in to the Django admin site (not a superuser)."""
    return UserFactory(username="alice", roles=["Admin"], is_staff=True)


@pytest.fixture
def staff_viewer(db):
    """victor as a Viewer who may also sign in to the Django admin site."""
    return UserFactory(username="victor", roles=["Viewer"], is_staff=True)


@pytest.fixture
def outsider(db):
    """A valid account that belongs to no role."""
    return UserFactory(username="oscar")


@pytest.fixture
def agent_api(client, agent) -> Api:
    return Api(client, issue_key(agent=agent))


@pytest.fixture
def other_agent_api(client, other_agent) -> Api:
    return Api(client, issue_key(agent=other_agent))


@pytest.fixture
def admin_api(client, admin_operator) -> Api:
    return Api(client, issue_key(user=admin_operator))


@pytest.fixture
def viewer_api(client, viewer) -> Api:
    return Api(client, issue_key(user=viewer))


@pytest.fixture
def outsider_api(client, outsider) -> Api:
    return Api(client, issue_key(user=outsider))


@pytest.fixture
def anonymous_api(client) -> Api:
    return Api(client)


@pytest.fixture(autouse=True)
def _private_var_dir(settings, tmp_path):
    """Files the code writes at run time (the demo credentials) go to the test's own folder,
    never over a developer's `var/`."""
    settings.VAR_DIR = tmp_path


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Real hashing is deliberately slow; tests do not need it to be."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def vlevel(db):
    """agent.seo.vlevel with seed 001's manifest active."""
    return load("agent.seo.vlevel")


@pytest.fixture
def architect(db):
    """agent.seo.architect, the escalation target of agent.seo.vlevel."""
    return load("agent.seo.architect")


@pytest.fixture
def vlevel_api(client, vlevel) -> Api:
    return Api(client, issue_key(agent=vlevel))


@pytest.fixture
def served(transactional_db, tmp_path):
    """The real web stack (gunicorn, 2 worker processes x 8 threads) on the test database, for
    tests with real concurrent clients. Yields the base URL."""
    from tests.support.processes import gunicorn

    with gunicorn(tmp_path) as base:
        yield base


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def database_down(django_db_blocker):
    """The default connection pointed at a port nothing listens on, then restored: the test
    database itself is never touched."""
    from django.db import connection

    with django_db_blocker.unblock():
        connection.close()
        saved = {key: connection.settings_dict.get(key) for key in ("HOST", "PORT")}
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(_closed_port()))
        try:
            yield
        finally:
            connection.close()
            connection.settings_dict.update(saved)
