"""`load_demo` creates working demo accounts and agent keys, and can run again."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from governance.models import ApiKey
from tests.conftest import Api


def _load() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_printed_reviewer_password_logs_in(client):
    output = _load()

    password = re.search(r"Demo account: reviewer / (\S+) \(Reviewer\)", output).group(1)
    assert client.login(username="reviewer", password=password)
    assert client.get("/inbox/").status_code == 200


@pytest.mark.django_db
def test_the_printed_agent_keys_work_and_only_the_last_one_stays_live(client):
    _load()
    output = _load()

    for agent_id, key in re.findall(r"Demo agent key for (\S+): (\S+)", output):
        assert Api(client, key).get(f"/agents/{agent_id}").status_code == 200
        assert ApiKey.objects.filter(agent__agent_id=agent_id, revoked_at__isnull=True).count() == 1
