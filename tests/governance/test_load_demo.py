"""`load_demo` makes the demo credentials once, on an empty database, and never touches them again."""

from __future__ import annotations

import re
import stat
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from controlplane import demo_credentials
from governance.kernel.models import ApiKey
from tests.factories.governance import UserFactory
from tests.support.api import Api

DEMO_AGENTS = ["agent.rag.indexer", "agent.seo.architect", "agent.seo.vlevel"]


def _load() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def _secrets(output: str) -> list[str]:
    passwords = re.findall(r"Demo account: \S+ / (\S+) ", output)
    keys = re.findall(r"Demo (?:agent|operator) key for \S+: (\S+)", output)
    return passwords + keys


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    """The credentials file goes to a var/ of the test's own, never the developer's."""
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.mark.django_db
def test_the_printed_reviewer_password_logs_in(client):
    output = _load()

    password = re.search(r"Demo account: reviewer / (\S+) \(Reviewer\)", output).group(1)
    assert client.login(username="reviewer", password=password)
    assert client.get("/inbox/").status_code == 200


@pytest.mark.django_db
def test_the_first_load_prints_one_working_key_per_demo_agent(client):
    output = _load()

    printed = dict(re.findall(r"Demo agent key for (\S+): (\S+)", output))
    assert sorted(printed) == DEMO_AGENTS
    for agent_id, key in printed.items():
        assert Api(client, key).get(f"/agents/{agent_id}").status_code == 200
    assert ApiKey.objects.filter(name="demo").count() == len(DEMO_AGENTS)


@pytest.mark.django_db
def test_the_first_load_prints_an_operator_key_for_admin_that_the_api_takes(client):
    """The README's first curl calls the API as an operator: the demo hands one out."""
    output = _load()

    key = re.search(r"Demo operator key for admin: (\S+)", output).group(1)
    listed = Api(client, key).get("/agents")
    assert listed.status_code == 200
    assert listed.json()["count"] == len(DEMO_AGENTS)
    assert ApiKey.objects.get(name="demo operator").user.username == "admin"


@pytest.mark.django_db
def test_the_credentials_file_holds_what_was_printed_and_only_its_owner_reads_it(var_dir):
    output = _load()

    path = var_dir / "demo-credentials.txt"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = path.read_text(encoding="utf-8")
    assert _secrets(output)
    assert _secrets(saved) == _secrets(output)
    assert f"Demo credentials saved to {path}" in output


@pytest.mark.django_db
def test_a_second_load_changes_no_password_superuser_flag_or_key(var_dir):
    first = _load()
    users = {u.username: (u.password, u.is_superuser, u.is_staff) for u in get_user_model().objects.all()}
    keys = list(ApiKey.objects.order_by("pk").values())
    saved = (var_dir / "demo-credentials.txt").read_text(encoding="utf-8")

    second = _load()

    assert {u.username: (u.password, u.is_superuser, u.is_staff) for u in get_user_model().objects.all()} == users
    assert list(ApiKey.objects.order_by("pk").values()) == keys
    assert (var_dir / "demo-credentials.txt").read_text(encoding="utf-8") == saved
    assert not any(secret in second for secret in _secrets(first))
    assert "Demo account:" not in second
    assert "Demo agent key" not in second
    assert f"Demo credentials: see {var_dir / 'demo-credentials.txt'}" in second


@pytest.mark.django_db
def test_an_operator_who_demoted_the_admin_stays_in_charge():
    _load()
    admin = get_user_model().objects.get(username="admin")
    admin.is_superuser = False
    admin.set_password("chosen by the operator")
    admin.save()

    _load()

    admin.refresh_from_db()
    assert not admin.is_superuser
    assert admin.check_password("chosen by the operator")


@pytest.mark.django_db
def test_no_demo_credentials_on_a_database_that_already_has_users(var_dir):
    UserFactory(username="alice", roles=["Admin"])

    output = _load()

    assert not get_user_model().objects.filter(username__in=["admin", "reviewer"]).exists()
    assert not ApiKey.objects.exists()
    assert not (var_dir / "demo-credentials.txt").exists()
    assert "Demo credentials: none created" in output


def test_the_file_is_replaced_whole_and_private_even_over_an_older_readable_one(tmp_path):
    path = tmp_path / "demo-credentials.txt"
    path.write_text("old secrets that are longer than the new ones\n", encoding="utf-8")
    path.chmod(0o644)

    demo_credentials._write_private(path, "new\n")

    assert path.read_text(encoding="utf-8") == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["demo-credentials.txt"]
