"""The shipped contract catalog on a plane that was never given the demo: every start adds the
contracts the catalog lacks (`serve --role all`, `import_contracts --missing`) and leaves every
other one as it is, an operator's later version included."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from governance.contracts import services as contracts
from governance.contracts.catalog import parse
from governance.contracts.models import Contract
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from tests.support.concurrency import at_once

SHIPPED = contracts.CATALOG.read_text(encoding="utf-8")


def _shipped_doc(name: str):
    return next(doc for doc in parse(SHIPPED) if doc.name == name)


@pytest.mark.django_db
def test_a_plane_without_contracts_gets_the_whole_shipped_catalog():
    report = contracts.add_missing(SHIPPED, actor=SYSTEM)

    assert (len(report.created), report.changed, report.unchanged) == (70, [], [])
    assert Contract.objects.filter(is_current=True, version=1).count() == 70
    assert AuditEvent.objects.filter(action="contract.created", actor="system").count() == 70


@pytest.mark.django_db
def test_the_next_start_writes_nothing():
    contracts.add_missing(SHIPPED, actor=SYSTEM)
    rows, audits = Contract.objects.count(), AuditEvent.objects.count()

    report = contracts.add_missing(SHIPPED, actor=SYSTEM)

    assert (report.created, report.changed, len(report.unchanged)) == ([], [], 70)
    assert (Contract.objects.count(), AuditEvent.objects.count()) == (rows, audits)


@pytest.mark.django_db
def test_an_operators_edit_survives_the_next_start(admin_operator):
    contracts.add_missing(SHIPPED, actor=SYSTEM)
    doc = _shipped_doc("retrieval_answer")
    doc.rows[0] = doc.rows[0].__class__("`status`", "`str` (`ok/refused/error/partial`)", "Oui", "", 0)
    edited, status = contracts.save_contract(doc, actor=Principal(user=admin_operator))
    assert (status, edited.version) == ("changed", 2)

    report = contracts.add_missing(SHIPPED, actor=SYSTEM)

    assert "retrieval_answer" in report.unchanged
    assert contracts.current("retrieval_answer").pk == edited.pk
    assert Contract.objects.filter(name="retrieval_answer").count() == 2


@pytest.mark.django_db
def test_a_contract_a_new_release_ships_is_added_at_the_next_start():
    older_release = SHIPPED.replace("### `retrieval_answer`", "### `retrieval_answer_draft`", 1)
    contracts.add_missing(older_release, actor=SYSTEM)

    report = contracts.add_missing(SHIPPED, actor=SYSTEM)

    assert report.created == ["retrieval_answer"]
    assert len(report.unchanged) == 69
    assert Contract.objects.filter(is_current=True).count() == 71  # the draft stays: contracts are never deleted


@pytest.mark.django_db
def test_the_command_with_missing_says_what_it_added_and_kept():
    out = StringIO()
    call_command("import_contracts", "--missing", stdout=out)
    call_command("import_contracts", "--missing", stdout=out)

    lines = out.getvalue().splitlines()
    assert "[contracts] 70 contract(s): 70 created, 0 new version(s), 0 unchanged" in lines
    assert "[contracts] 70 contract(s): 0 created, 0 new version(s), 70 unchanged" in lines
    assert Contract.objects.count() == 70


@pytest.mark.django_db(transaction=True)
def test_two_starts_at_once_add_each_contract_once():
    results, errors = at_once(lambda: contracts.add_missing(SHIPPED, actor=SYSTEM), callers=2)

    assert errors == []
    assert sorted(len(report.created) for report in results) == [0, 70]
    assert Contract.objects.count() == 70
