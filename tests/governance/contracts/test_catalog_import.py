"""Importing the contract catalog: all of seed 000, idempotent re-imports, new versions for
changed contracts, audit records that keep the version they were checked against."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from governance.contracts import services as contracts
from governance.contracts.catalog import parse
from governance.contracts.models import Contract, ContractCheck, ContractDailyStat, ContractField
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal

pytestmark = pytest.mark.django_db


def _doc(name: str):
    return next(d for d in parse(contracts.CATALOG.read_text(encoding="utf-8")) if d.name == name)


def test_the_command_imports_all_seventy_contracts_of_the_seed():
    out = StringIO()
    call_command("import_contracts", stdout=out)
    assert Contract.objects.filter(is_current=True).count() == 70
    assert ContractField.objects.count() == 370
    assert out.getvalue().strip().endswith("70 contract(s): 70 created, 0 new version(s), 0 unchanged")


def test_importing_the_same_catalog_again_changes_nothing(catalog):
    out = StringIO()
    call_command("import_contracts", stdout=out)
    assert "70 contract(s): 0 created, 0 new version(s), 70 unchanged" in out.getvalue()
    assert Contract.objects.count() == 70


def test_a_changed_contract_becomes_a_new_version_and_the_old_one_stays(catalog, tmp_path):
    text = contracts.CATALOG.read_text(encoding="utf-8").replace(
        "| `status` | `str` (`ok/refused/error`) | Oui |", "| `status` | `str` (`ok/refused/error/partial`) | Oui |"
    )
    edited = tmp_path / "catalog.md"
    edited.write_text(text, encoding="utf-8")
    out = StringIO()
    call_command("import_contracts", str(edited), stdout=out)
    assert "[contracts] changed: retrieval_answer" in out.getvalue()
    assert "1 new version(s), 69 unchanged" in out.getvalue()
    old, new = Contract.objects.filter(name="retrieval_answer").order_by("version")
    assert (old.version, old.is_current, new.version, new.is_current) == (1, False, 2, True)
    assert old.fields.get(path="status").constraints["enum"] == ["ok", "refused", "error"]
    assert new.fields.get(path="status").constraints["enum"] == ["ok", "refused", "error", "partial"]
    assert AuditEvent.objects.filter(action="contract.changed", target_id=str(new.pk)).exists()


def test_checks_keep_the_version_they_were_checked_against(catalog, agent):
    principal = Principal(agent=agent)
    first = contracts.current("retrieval_answer")
    (before,) = contracts.check([contracts.Submission(first, {"status": "partial"})], principal=principal)
    doc = _doc("retrieval_answer")
    doc.rows[0] = doc.rows[0].__class__("`status`", "`str` (`ok/refused/error/partial`)", "Oui", "", 0)
    second, status = contracts.save_contract(doc, actor=SYSTEM)
    (after,) = contracts.check([contracts.Submission(second, {"status": "partial"})], principal=principal)
    assert status == "changed"
    assert (before.contract.version, before.compliant) == (1, False)
    assert (after.contract.version, after.compliant) == (2, True)


def test_a_document_with_an_unreadable_row_imports_nothing(tmp_path):
    text = contracts.CATALOG.read_text(encoding="utf-8")
    text = text.replace("| `summary` | `str` | Oui |", "| `summary` | tuple | Oui |", 1)
    bad = tmp_path / "bad.md"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError, match="unknown type words: 'tuple'"):
        call_command("import_contracts", str(bad))
    assert not Contract.objects.exists()


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_contracts", str(tmp_path / "none.md"))


def test_a_contract_renders_back_to_the_catalog_markdown_it_came_from(catalog):
    contract = contracts.current("goal_priority_review")
    (doc,) = parse(contracts.render(contract))
    original = _doc("goal_priority_review")
    assert (doc.name, doc.module, doc.section) == (original.name, original.module, original.section)
    assert [(r.path, r.type, r.required, r.effect) for r in doc.rows] == [
        (r.path, r.type, r.required, r.effect) for r in original.rows
    ]
    assert doc.notes == original.notes
    assert contracts.save_contract(doc, actor=SYSTEM)[1] == "unchanged"


def _log(tmp_path, lines: list) -> str:
    path = tmp_path / "llm.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return str(path)


def test_an_llm_log_is_audited_line_by_line_with_a_summary(catalog, agent, tmp_path):
    path = _log(
        tmp_path,
        [
            {"contract": "retrieval_answer", "output": {"status": "ok"}, "agent": agent.agent_id, "ts": 1_700_000_000},
            {
                "contract": "retrieval_answer",
                "output": {"status": "nope"},
                "agent": agent.agent_id,
                "ts": "2023-11-15T10:00:00+00:00",
            },
            {"contract": "memory_retrieval_ranking", "output": {"rankings": [{"id": "4", "score": 0.2}]}},
        ],
    )
    out, err = StringIO(), StringIO()
    call_command("audit_llm_log", path, stdout=out, stderr=err)
    assert "3 line(s), 3 checked, 1 compliant (33.3%), 0 rejected" in out.getvalue()
    assert "1 x not_in_enum at retrieval_answer:status" in out.getvalue()
    assert "1 x wrong_type at memory_retrieval_ranking:rankings[*].id" in out.getvalue()
    checks = ContractCheck.objects.filter(source="log").order_by("checked_at")
    assert checks.count() == 3
    assert checks[0].checked_at.isoformat() == "2023-11-14T22:13:20+00:00"
    assert checks[0].agent == agent
    assert checks[2].agent is None
    days = {(s.day.isoformat(), s.agent_label): s.checks for s in ContractDailyStat.objects.all()}
    assert days[("2023-11-14", agent.agent_id)] == 1
    assert days[("2023-11-15", agent.agent_id)] == 1


def test_bad_log_lines_are_rejected_on_stderr_and_the_others_go_on(catalog, tmp_path):
    path = _log(
        tmp_path,
        [
            "{not json",
            {"contract": "nope", "output": {}},
            {"contract": "retrieval_answer"},
            {"contract": "retrieval_answer", "output": {"status": "ok"}, "agent": "agent.ghost"},
            {"contract": "retrieval_answer", "output": {"status": "ok"}, "ts": "yesterday"},
            {"contract": "retrieval_answer", "output": {"status": "ok"}},
        ],
    )
    out, err = StringIO(), StringIO()
    call_command("audit_llm_log", path, stdout=out, stderr=err)
    rejected = err.getvalue().splitlines()
    assert [line.split(":")[0] for line in rejected] == ["[audit] rejected"] * 5
    assert "line 2: unknown contract 'nope'" in err.getvalue()
    assert "line 4: unknown agent 'agent.ghost'" in err.getvalue()
    assert "6 line(s), 1 checked, 1 compliant (100.0%), 5 rejected" in out.getvalue()
    assert ContractCheck.objects.count() == 1
