"""Batches of audits posted at the same time by real clients to the real web stack: every check
is stored once and the daily aggregates add up to the stored checks."""

from __future__ import annotations

import json
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db.models import Sum

from governance.contracts import services as contracts
from governance.contracts.models import ContractCheck, ContractDailyStat, ContractViolationStat
from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def _post(url: str, key: str, body: dict) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status


def test_concurrent_batches_keep_the_aggregates_equal_to_the_checks(served, agent, other_agent):
    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    keys = [issue_api_key(actor=SYSTEM, name="c", agent=a)[1] for a in (agent, other_agent)]
    # The same (day, contract, path, code) keys in every batch, in different orders: the upserts
    # meet on the same rows.
    good = {"contract": "retrieval_answer", "output": {"status": "ok"}}
    bad = {"contract": "retrieval_answer", "output": {"status": "maybe"}}
    ranking = {"contract": "memory_retrieval_ranking", "output": {"rankings": [{"id": "1", "score": 0.5}]}}
    batches = [[good, bad, ranking] * 20 if n % 2 else [ranking, bad, good] * 20 for n in range(16)]
    barrier = threading.Barrier(len(batches))

    def send(n: int) -> int:
        barrier.wait()
        return _post(f"{served}/api/v1/contracts/audit", keys[n % 2], {"items": batches[n]})

    with ThreadPoolExecutor(max_workers=len(batches)) as pool:
        statuses = list(pool.map(send, range(len(batches))))

    assert statuses == [200] * len(batches)
    assert ContractCheck.objects.count() == 16 * 60
    totals = ContractDailyStat.objects.aggregate(checks=Sum("checks"), compliant=Sum("compliant"))
    assert totals == {"checks": 960, "compliant": 320}
    per_agent = dict(ContractDailyStat.objects.values_list("agent_label").annotate(n=Sum("checks")))
    assert per_agent == {agent.agent_id: 480, other_agent.agent_id: 480}
    counts = {(s.contract_name, s.path, s.code): s.count for s in ContractViolationStat.objects.all()}
    assert counts == {
        ("retrieval_answer", "status", "not_in_enum"): 320,
        ("memory_retrieval_ranking", "rankings[*].id", "wrong_type"): 320,
    }
