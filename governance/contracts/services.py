"""The contract catalog and its audit: importing versions, checking outputs, keeping the
report aggregates. The rules themselves are pure (governance/contracts/rules.py); this module owns
the transactions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, QuerySet, Sum
from django.urls import reverse
from django.utils import timezone

from governance.contracts import catalog as contract_catalog
from governance.contracts import codegen
from governance.contracts import rules as contract_rules
from governance.contracts.models import (
    Contract,
    ContractCheck,
    ContractDailyStat,
    ContractField,
    ContractViolationStat,
    checked,
)
from governance.contracts.validator import Report, first_unserializable
from governance.kernel import metrics, retention
from governance.kernel.access import agent_or_perm, get_for
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record
from governance.notifications import services as notifications

if TYPE_CHECKING:
    from agents.models import Agent

CATALOG = Path(__file__).resolve().parents[1] / "catalog" / "llm_output_contracts.md"
_INDEX = re.compile(r"\[\d+\]")
CATALOG_LOCK = "governance.contracts.add_missing"  # the advisory lock of the catalog's additions


# --- Catalog -------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # a new version was stored
    unchanged: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.created) + len(self.changed) + len(self.unchanged)


def _content_hash(doc: contract_catalog.ContractDoc) -> str:
    rows = [[r.path, r.type, r.required, r.effect] for r in doc.rows]
    data = {"module": doc.module, "section": doc.section, "notes": doc.notes, "rows": rows}
    return hashlib.sha256(json.dumps(data, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def _field(contract: Contract, row: contract_catalog.FieldRow, rule: contract_rules.FieldRule) -> ContractField:
    kind = contract_rules.Kind.MAPPING if rule.whole_output else rule.type.kind
    constraints = {
        key: value
        for key, value in {
            "minimum": rule.type.minimum,
            "maximum": rule.type.maximum,
            "enum": list(rule.type.enum),
            "enum_open": rule.type.enum_open,
            "non_empty": rule.type.non_empty,
            "keys": list(rule.type.keys),
            "existing": rule.type.existing,
            "serializable": rule.type.serializable,
            "other_fields": rule.other_fields,
            "whole_output": rule.whole_output,
        }.items()
        if value is not None and value is not False and value != []
    }
    condition = ""
    if rule.condition is not None:
        condition = f"{rule.condition.field} in {', '.join(rule.condition.values)}"
    elif rule.group:
        condition = "one of the rows marked alternative"
    return ContractField(
        contract=contract,
        position=row.position,
        path=rule.paths[0] if rule.paths else "*",
        alternatives=list(rule.paths[1:]),
        path_text=row.path,
        type_text=row.type,
        kind=kind.value,
        constraints=constraints,
        required=rule.requirement.value,
        required_text=row.required,
        condition=condition,
        effect=row.effect,
    )


def _rules(doc: contract_catalog.ContractDoc) -> list[contract_rules.FieldRule]:
    """The rule of every row, or 422 naming each row the type language cannot read."""
    rules, errors = [], []
    for row in doc.rows:
        try:
            rules.append(contract_rules.rule_from_row(row.path, row.type, row.required, row.effect))
        except contract_rules.RowError as exc:
            errors.append({"loc": [doc.name, "rows", row.position], "msg": str(exc), "type": "contract_row"})
    if errors:
        raise InvalidInput(f"Contract {doc.name} has rows that cannot be checked.", errors)
    return rules


# Not durable: import_catalog, add_missing and the admin's change form call it inside their own transaction.
@transaction.atomic
def save_contract(doc: contract_catalog.ContractDoc, *, actor: Principal) -> tuple[Contract, str]:
    """Store ``doc`` as the next version of its contract unless the current one says the same.
    Returns the current version and "created", "changed" or "unchanged"."""
    rules = _rules(doc)
    digest = _content_hash(doc)
    current = Contract.objects.select_for_update().filter(name=doc.name, is_current=True).first()
    if current is not None and current.content_sha256 == digest:
        return current, "unchanged"
    latest = Contract.objects.filter(name=doc.name).aggregate(top=Max("version"))["top"] or 0
    if current is not None:
        Contract.objects.filter(pk=current.pk).update(is_current=False)
    contract = Contract.objects.create(
        name=doc.name,
        version=latest + 1,
        module=doc.module,
        section=doc.section,
        notes="\n\n".join(doc.notes),
        content_sha256=digest,
        created_by=actor.label,
    )
    ContractField.objects.bulk_create(_field(contract, row, rule) for row, rule in zip(doc.rows, rules, strict=True))
    status, action = (
        ("created", AuditAction.CONTRACT_CREATED) if current is None else ("changed", AuditAction.CONTRACT_CHANGED)
    )
    record(actor=actor, action=action, target=contract, version=contract.version)
    return contract, status


def _parse_catalog(text: str) -> list[contract_catalog.ContractDoc]:
    try:
        return contract_catalog.parse(text)
    except contract_catalog.CatalogError as exc:
        raise InvalidInput("The document is not a contract catalog.", [{"loc": ["document"], "msg": str(exc)}]) from exc


def import_catalog(text: str, *, actor: Principal) -> ImportReport:
    """Every contract of a seed-000 shaped document, in one transaction: a document with one bad
    row imports nothing."""
    docs = _parse_catalog(text)
    report = ImportReport()
    # Not durable: load_demo runs each app's demo, which calls this, in one transaction.
    with transaction.atomic():
        for doc in docs:
            _, status = save_contract(doc, actor=actor)
            getattr(report, status).append(doc.name)
    return report


def add_missing(text: str, *, actor: Principal) -> ImportReport:
    """The contracts of ``text`` the catalog has no version of, stored as their first version;
    every other one is left as it is (reported unchanged), whatever the document says of it.

    What every start of the plane runs with the shipped catalog (``serve``): an operator's edit
    is a later version that the shipped text must never replace, while a contract a new release
    ships still reaches the plane at its next start. Contracts are never deleted, so nothing an
    operator removed comes back. One transaction under an advisory lock: two starts at once add
    each contract once."""
    docs = _parse_catalog(text)
    report = ImportReport()
    with transaction.atomic(durable=True):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [CATALOG_LOCK])
        names = [doc.name for doc in docs]
        known = set(Contract.objects.filter(name__in=names).order_by().values_list("name", flat=True))
        for doc in docs:
            if doc.name in known:
                report.unchanged.append(doc.name)
            else:
                save_contract(doc, actor=actor)
                report.created.append(doc.name)
    return report


def render(contract: Contract) -> str:
    """The contract in the catalog's own Markdown, so it can be edited and imported back."""
    lines = [
        f"## {contract.section}",
        "",
        f"### `{contract.name}` — `{contract.module}`",
        "",
        "| Champ | Type attendu | Obligatoire | Effet runtime |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {f.path_text} | {f.type_text} | {f.required_text} | {f.effect} |" for f in contract.fields.all()]
    for note in filter(None, contract.notes.split("\n\n")):
        label, _, body = note.partition(": ")
        lines += ["", f"**{label}** : {body}" if body else f"**{label}**"]
    return "\n".join(lines) + "\n"


def current(name: str) -> Contract:
    return version(name, None)


def version(name: str, number: int | None) -> Contract:
    """The current version, or the numbered one; 404 for a name or version the catalog lacks."""
    found = Contract.objects.filter(name=name)
    contract = (found.filter(is_current=True) if number is None else found.filter(version=number)).first()
    if contract is None:
        raise NotFound(f"No contract named {name!r}" + (f" in version {number}." if number else "."))
    return contract


# --- Validation ----------------------------------------------------------------------------------

Validator = Callable[[Any, frozenset[str] | None], Report]


@lru_cache(maxsize=512)
def rules(contract_id: int) -> tuple[contract_rules.FieldRule, ...]:
    """The rules of one contract version, from the catalog's own words (versions never change:
    cached for the life of the process)."""
    rows = ContractField.objects.filter(contract_id=contract_id).order_by("position")
    return tuple(contract_rules.rule_from_row(f.path_text, f.type_text, f.required_text, f.effect) for f in rows)


@lru_cache(maxsize=512)
def validator(contract_id: int) -> Validator:
    """The version's generated validator (``codegen``: Python written from its rules, compiled
    once per process and set of rules)."""
    return codegen.compile_contract(rules(contract_id))


def validator_source(contract: Contract) -> str:
    """The Python the service runs for this version, for operators to audit."""
    return codegen.generate(rules(contract.pk))


@dataclass(frozen=True)
class Submission:
    """One output to check, with what the caller knows about where it came from."""

    contract: Contract
    output: Any
    session_id: UUID | None = None
    job_id: UUID | None = None
    known_ids: frozenset[str] | None = None
    agent: Agent | None = None  # the agent whose call it was, when not the submitter (LLM logs)
    at: datetime | None = None  # when the call happened, when known (LLM logs)


def _digest(output: Any) -> str:
    encoded = json.dumps(output, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(encoded.encode()).hexdigest()


def check(
    submissions: Sequence[Submission], *, principal: Principal, source: str = ContractCheck.Source.API
) -> list[ContractCheck]:
    """Validate every submission and store the audit records and their aggregates in one
    transaction. The outputs are validated before the transaction opens. Agents and the system
    submit freely; a person needs the permission to add audit records (a Viewer only reads)."""
    if principal.user is not None and not principal.has_perm("governance.add_contractcheck"):
        raise Forbidden("Storing contract checks needs the governance.add_contractcheck permission.")
    now = timezone.now()
    keep_output = settings.CONTRACT_AUDIT_STORE_OUTPUTS
    rows: list[ContractCheck] = []
    for item in submissions:
        report = validator(item.contract.pk)(item.output, item.known_ids)
        rows.append(
            ContractCheck(
                contract=item.contract,
                contract_name=item.contract.name,
                agent=item.agent or principal.agent,
                submitted_by=principal.label,
                session_id=item.session_id,
                job_id=item.job_id,
                source=source,
                compliant=report.compliant,
                violations=[v.as_dict() for v in report.violations],
                warnings=[w.as_dict() for w in report.warnings],
                output=_storable(item.output) if keep_output else None,
                output_sha256=_digest(item.output),
                checked_at=item.at or now,
            )
        )
    # Not durable: load_demo runs each app's demo, which calls this, in one transaction.
    with transaction.atomic():
        ContractCheck.objects.bulk_create(rows)
        _aggregate(rows)
        _watch_compliance(rows)
        _count(rows)
    return rows


def _count(rows: Sequence[ContractCheck]) -> None:
    """The metrics' checks and broken outputs per contract (a scrape never reads the checks table)."""
    checks = Counter(row.contract_name for row in rows)
    broken = Counter(row.contract_name for row in rows if not row.compliant)
    for name, n in checks.items():
        metrics.count_on_commit(metrics.CONTRACT_CHECKS, name, amount=n)
    for name, n in broken.items():
        metrics.count_on_commit(metrics.CONTRACT_VIOLATIONS, name, amount=n)


def _watch_compliance(rows: Sequence[ContractCheck]) -> None:
    """Measure, for each compliance rule (governance/notifications), the contracts these checks
    touched in its scope: the share of compliant checks among its latest ``window_checks``, once
    there are that many. The rule tells once when it drops below its threshold."""
    rules = notifications.compliance_rules()
    for rule in rules:
        in_scope = {
            row.contract_name
            for row in rows
            if (rule.agent_id is None or row.agent_id == rule.agent_id)
            and (not rule.domain or (row.agent is not None and row.agent.domain == rule.domain))
        }
        for name in sorted(in_scope):
            latest = ContractCheck.objects.filter(contract_name=name)
            if rule.agent_id is not None:
                latest = latest.filter(agent_id=rule.agent_id)
            if rule.domain:
                latest = latest.filter(agent__domain=rule.domain)
            verdicts = list(
                latest.order_by("-checked_at", "-pk").values_list("compliant", flat=True)[: rule.window_checks]
            )
            if len(verdicts) < rule.window_checks:
                continue
            percent = 100 * sum(verdicts) / len(verdicts)
            notifications.compliance_measured(
                rule,
                contract=name,
                percent=percent,
                link_path=reverse("contracts:contract-detail", args=[name]),
                facts={
                    "contract": name,
                    "compliance": f"{percent:.1f}%",
                    "threshold": f"{rule.threshold_percent}%",
                    "over": f"the latest {len(verdicts)} checks",
                    "scope": rule.agent.agent_id if rule.agent else (rule.domain or "every agent"),
                },
            )


def _storable(output: Any) -> Any:
    """JSON can hold what the API received; a Python caller may pass NaN or objects: keep text."""
    if first_unserializable(output, "") is None:
        return output
    return {"unserializable": repr(output)[:10_000]}


def _aggregate(rows: Iterable[ContractCheck]) -> None:
    """Add the checks to the daily counters: one upsert per table, keys sorted so that two
    concurrent batches lock them in the same order (no deadlock)."""
    daily: Counter[tuple[date, str, str]] = Counter()
    good: Counter[tuple[date, str, str]] = Counter()
    broken: Counter[tuple[date, str, str]] = Counter()
    paths: Counter[tuple[date, str, str, str]] = Counter()
    for row in rows:
        day = timezone.localdate(row.checked_at)
        key = (day, row.contract_name, row.agent.agent_id if row.agent else "")
        daily[key] += 1
        good[key] += row.compliant
        broken[key] += len(row.violations)
        for violation in row.violations:
            paths[(day, row.contract_name, _INDEX.sub("[*]", violation["path"]), violation["code"])] += 1
    _upsert(
        ContractDailyStat,
        ["day", "contract_name", "agent_label"],
        ["checks", "compliant", "violations"],
        [(*key, daily[key], good[key], broken[key]) for key in sorted(daily)],
        ["date", "text", "text", "int", "int", "int"],
    )
    _upsert(
        ContractViolationStat,
        ["day", "contract_name", "path", "code"],
        ["count"],
        [(*key, paths[key]) for key in sorted(paths)],
        ["date", "text", "text", "text", "int"],
    )


def _upsert(model: type, keys: list[str], counters: list[str], rows: list[tuple], types: list[str]) -> None:
    if not rows:
        return
    columns = keys + counters
    arrays = ", ".join(f"%s::{t}[]" for t in types)
    increments = ", ".join(f"{c} = {model._meta.db_table}.{c} + EXCLUDED.{c}" for c in counters)
    sql = (
        f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
        f"SELECT * FROM unnest({arrays}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {increments}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(column) for column in zip(*rows, strict=True)])


# --- LLM logs ------------------------------------------------------------------------------------

LOG_BATCH = 1000
PROGRESS_EVERY = 5000


@dataclass
class LogReport:
    lines: int = 0
    checked: int = 0
    compliant: int = 0
    rejected: int = 0
    violations: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (contract, path, code)
    per_contract: Counter[str] = field(default_factory=Counter)


def _log_time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=UTC)
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError("ts is neither a number nor an ISO 8601 string")


def audit_log(
    lines: Iterable[str],
    *,
    source: str,
    principal: Principal,
    progress: Callable[[str, int], None] | None = None,
    warn: Callable[[str], None] = print,
) -> LogReport:
    """Audit a JSONL log of LLM calls (``{"contract", "output", "agent"?, "ts"?}`` per line) in
    batches of LOG_BATCH checks, each batch one transaction. A bad line is reported through
    ``warn`` as ``[audit] rejected: line N: reason`` and the others go on."""
    report = LogReport()
    catalog = {c.name: c for c in Contract.objects.filter(is_current=True)}
    agents = {a.agent_id: a for a in checked("agent")._default_manager.all()}
    batch: list[Submission] = []

    def flush() -> None:
        for row in check(batch, principal=principal, source=ContractCheck.Source.LOG):
            report.checked += 1
            report.compliant += row.compliant
            report.per_contract[row.contract_name] += 1
            for violation in row.violations:
                report.violations[(row.contract_name, _INDEX.sub("[*]", violation["path"]), violation["code"])] += 1
        batch.clear()

    for number, line in enumerate(lines, start=1):
        report.lines = number
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(source, number)
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or "output" not in entry:
                raise ValueError('a line is an object with "contract" and "output"')
            contract = catalog.get(entry.get("contract"))
            if contract is None:
                raise ValueError(f"unknown contract {entry.get('contract')!r}")
            agent = None
            if entry.get("agent") is not None:
                agent = agents.get(entry["agent"])
                if agent is None:
                    raise ValueError(f"unknown agent {entry['agent']!r}")
            batch.append(Submission(contract, entry["output"], agent=agent, at=_log_time(entry.get("ts"))))
        except ValueError as exc:
            report.rejected += 1
            warn(f"[audit] rejected: line {number}: {exc}")
            continue
        if len(batch) >= LOG_BATCH:
            flush()
    if batch:
        flush()
    return report


# --- Reports -------------------------------------------------------------------------------------


@dataclass
class Stats:
    checks: int
    compliant: int
    violations: int
    top_paths: list[dict[str, Any]]
    per_day: list[dict[str, Any]]

    @property
    def compliance_rate(self) -> float | None:
        return round(self.compliant / self.checks, 4) if self.checks else None


def stats(
    *, contract_name: str | None = None, agent_label: str | None = None, since: date | None = None, top: int = 10
) -> Stats:
    """Compliance and top violations from the daily aggregates (never from the checks table)."""
    daily = ContractDailyStat.objects.all()
    broken = ContractViolationStat.objects.all()
    if contract_name is not None:
        daily, broken = daily.filter(contract_name=contract_name), broken.filter(contract_name=contract_name)
    if agent_label is not None:
        daily = daily.filter(agent_label=agent_label)
    if since is not None:
        daily, broken = daily.filter(day__gte=since), broken.filter(day__gte=since)
    totals = daily.aggregate(checks=Sum("checks"), compliant=Sum("compliant"), violations=Sum("violations"))
    per_day = list(daily.values("day").annotate(checks=Sum("checks"), compliant=Sum("compliant")).order_by("day"))
    top_paths = []
    if agent_label is None:  # path aggregates are per contract, not per agent
        top_paths = list(
            broken.values("path", "code").annotate(count=Sum("count")).order_by("-count", "path", "code")[:top]
        )
    return Stats(
        checks=totals["checks"] or 0,
        compliant=totals["compliant"] or 0,
        violations=totals["violations"] or 0,
        top_paths=top_paths,
        per_day=per_day,
    )


def _ranked(rows: Iterable[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Worst first by violation rate (share of non-compliant checks), then by volume."""
    ranked = [
        {**row, "violation_rate": round(1 - row["compliant"] / row["checks"], 4)} for row in rows if row["checks"]
    ]
    return sorted(ranked, key=lambda r: (-r["violation_rate"], -r["checks"], r[name]))


def ranking(by: str, *, since: date | None = None, agent_label: str | None = None) -> list[dict[str, Any]]:
    """The fleet view: contracts (``by="contract_name"``) or agents (``by="agent_label"``) ranked
    by violation rate, from the daily aggregates."""
    daily = ContractDailyStat.objects.all()
    if since is not None:
        daily = daily.filter(day__gte=since)
    if agent_label is not None:
        daily = daily.filter(agent_label=agent_label)
    if by == "agent_label":
        daily = daily.exclude(agent_label="")
    totals = {"checks": Sum("checks"), "compliant": Sum("compliant"), "violations": Sum("violations")}
    return _ranked(daily.values(by).annotate(**totals), by)


def submission(
    principal: Principal,
    contract: Contract,
    *,
    output: Any,
    session: UUID | None = None,
    job: UUID | None = None,
    known_ids: Iterable[str | int] | None = None,
) -> Submission:
    """One output to check, with the session or job it came from as the principal may name them:
    an agent names only its own."""
    session_id = job_id = None
    if session is not None:
        sessions = checked("session")._default_manager.all()
        session_id = get_for(principal, sessions, session, perm="ai_sessions.view_aisession", what="session").pk
    if job is not None:
        job_id = get_for(principal, checked("job")._default_manager.all(), job, perm="agents.view_job", what="job").pk
    known = frozenset(str(i) for i in known_ids) if known_ids is not None else None
    return Submission(contract, output, session_id=session_id, job_id=job_id, known_ids=known)


def validate_output(principal: Principal, name: str, **fields: Any) -> ContractCheck:
    """Check one output against the current version of contract ``name``; the check is stored
    (the REST endpoint and the MCP tool both come here)."""
    agent_or_perm(principal, "governance.add_contractcheck")
    (stored,) = check([submission(principal, current(name), **fields)], principal=principal)
    return stored


def report(check: ContractCheck) -> dict[str, Any]:
    return {
        "contract": check.contract_name,
        "version": check.contract.version,
        "compliant": check.compliant,
        "violations": check.violations,
        "warnings": check.warnings,
        "reportId": check.pk,
    }


def _checks_with_outputs(cutoff: datetime) -> QuerySet[ContractCheck]:
    return ContractCheck.objects.filter(output__isnull=False, checked_at__lt=cutoff)


# Archived, never pruned: the check row is the audit of an output (its verdict, violations and
# the SHA-256 that proves which output it was); only the stored output, the bulk, goes.
OUTPUT_RETENTION = retention.Policy(
    name="contract check outputs", action=retention.ARCHIVE, candidates=_checks_with_outputs, archived={"output": None}
)
