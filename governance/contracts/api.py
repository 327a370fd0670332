"""Contracts router (/api/v1/contracts): the catalog, validation with audit records, batch audit,
spec audit, and statistics."""

from datetime import date
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest
from ninja import Body, Field, Query, Router, Schema
from ninja.pagination import paginate

from governance.contracts import services as contracts
from governance.contracts import spec as contract_spec
from governance.contracts.models import Contract, ContractCheck
from governance.kernel.access import agent_or_perm
from governance.kernel.auth import caller, operator_key
from governance.kernel.exceptions import Forbidden, InvalidInput
from governance.kernel.validation import BoundedLimitOffsetPagination

router = Router(tags=["contracts"])


class ContractSummary(Schema):
    name: str
    module: str
    section: str
    version: int
    fields: int


class FieldOut(Schema):
    path: str
    alternatives: list[str]
    type: str
    kind: str
    constraints: dict[str, Any]
    required: str
    condition: str
    effect: str


class ContractOut(Schema):
    name: str
    module: str
    section: str
    version: int
    notes: str
    fields: list[FieldOut]


class ContractViolation(Schema):
    """One place where an output breaks its contract: `path` in the output, `code`, and what to do."""

    path: str
    code: str
    message: str
    effect: str = ""
    hint: str = ""


class ValidateIn(Schema):
    output: Any = Field(..., description="The LLM output, as the model returned it (any JSON)")
    session: UUID | None = None
    job: UUID | None = None
    known_ids: list[str | int] | None = Field(
        None, max_length=100_000, description="Ids the prompt offered: ids outside them are unknown_id"
    )


class ReportOut(Schema):
    contract: str
    version: int
    compliant: bool
    violations: list[ContractViolation]
    warnings: list[ContractViolation]
    reportId: int


class AuditItem(ValidateIn):
    contract: str = Field(..., min_length=1, max_length=100)


class AuditIn(Schema):
    items: list[AuditItem] = Field(..., min_length=1, max_length=settings.CONTRACT_AUDIT_BATCH_MAX)


class AuditOut(Schema):
    total: int
    compliant: int
    reports: list[ReportOut]


class SpecAuditOut(Schema):
    contract: str
    version: int
    kind: str
    missing_required: list[dict[str, Any]]
    unknown_fields: list[dict[str, Any]]
    type_mismatches: list[dict[str, Any]]


class StatsFilter(Schema):
    since: date | None = None


class ViolationCount(Schema):
    path: str
    code: str
    count: int


class DayOut(Schema):
    day: date
    checks: int
    compliant: int


class StatsOut(Schema):
    contract: str
    since: date | None
    checks: int
    compliant: int
    compliance_rate: float | None
    violations: int
    top_violations: list[ViolationCount]
    per_day: list[DayOut]


def _field_out(field: Any) -> dict[str, Any]:
    return {
        "path": field.path,
        "alternatives": field.alternatives,
        "type": field.type_text,
        "kind": field.kind,
        "constraints": field.constraints,
        "required": field.required,
        "condition": field.condition,
        "effect": field.effect,
    }


@router.get("", operation_id="list_contracts", response=list[ContractSummary])
@paginate(BoundedLimitOffsetPagination)
def list_contracts(request: HttpRequest, section: str | None = None, q: str | None = None) -> Any:
    """The current version of every contract, by section then name."""
    agent_or_perm(caller(request), "governance.view_contract")
    found = Contract.objects.filter(is_current=True).order_by("section", "name")
    if section:
        found = found.filter(section=section)
    if q:
        found = found.filter(name__icontains=q)
    return [
        {"name": c.name, "module": c.module, "section": c.section, "version": c.version, "fields": c.n}
        for c in found.annotate(n=Count("fields"))
    ]


def _fields(data: ValidateIn) -> dict[str, Any]:
    return {"output": data.output, "session": data.session, "job": data.job, "known_ids": data.known_ids}


# Before /{name}: Django resolves the first matching pattern, and /{name} matches /audit.
@router.post("/audit", operation_id="audit_contract_outputs", response=AuditOut)
def audit(request: HttpRequest, data: AuditIn) -> dict[str, Any]:
    """Up to 1000 outputs, each against its named contract; stored as one batch. An unknown
    contract name refuses the whole batch (422 naming the item), nothing stored."""
    principal = caller(request)
    agent_or_perm(principal, "governance.add_contractcheck")
    names = {item.contract for item in data.items}
    current = {c.name: c for c in Contract.objects.filter(name__in=names, is_current=True)}
    unknown = [
        {"loc": ["body", "items", index, "contract"], "msg": f"unknown contract {item.contract!r}", "type": "unknown"}
        for index, item in enumerate(data.items)
        if item.contract not in current
    ]
    if unknown:
        raise InvalidInput("Some items name no contract of the catalog.", unknown)
    submissions = [contracts.submission(principal, current[item.contract], **_fields(item)) for item in data.items]
    checks = contracts.check(submissions, principal=principal, source=ContractCheck.Source.BATCH)
    return {
        "total": len(checks),
        "compliant": sum(c.compliant for c in checks),
        "reports": [contracts.report(c) for c in checks],
    }


@router.get("/{name}", operation_id="get_contract", response=ContractOut)
def get_contract(request: HttpRequest, name: str, version: int | None = None) -> dict[str, Any]:
    agent_or_perm(caller(request), "governance.view_contract")
    contract = contracts.version(name, version)
    return {
        "name": contract.name,
        "module": contract.module,
        "section": contract.section,
        "version": contract.version,
        "notes": contract.notes,
        "fields": [_field_out(f) for f in contract.fields.all()],
    }


@router.post("/{name}/validate", operation_id="validate_contract_output", response=ReportOut)
def validate(request: HttpRequest, name: str, data: ValidateIn) -> dict[str, Any]:
    """Check one output against the current version of the contract; every call is stored."""
    return contracts.report(contracts.validate_output(caller(request), name, **_fields(data)))


@router.post("/{name}/spec-audit", operation_id="spec_audit", response=SpecAuditOut)
def spec_audit(request: HttpRequest, name: str, data: Body[Any]) -> dict[str, Any]:
    """A prompt's declared output: a JSON Schema, or an example answer; either as the body itself
    or wrapped as {"schema": ...} / {"example": ...}."""
    agent_or_perm(caller(request), "governance.view_contract")
    contract = contracts.current(name)
    document = data
    if isinstance(data, dict) and len(data) == 1 and ("schema" in data or "example" in data):
        document = data.get("schema", data.get("example"))
    result = contract_spec.audit(contracts.rules(contract.pk), document)
    return {
        "contract": contract.name,
        "version": contract.version,
        "kind": "schema" if contract_spec.is_schema(document) else "example",
        "missing_required": result.missing_required,
        "unknown_fields": result.unknown_fields,
        "type_mismatches": result.type_mismatches,
    }


@router.get("/{name}/stats", operation_id="contract_stats", response=StatsOut, auth=operator_key)
def contract_stats(request: HttpRequest, name: str, filters: Query[StatsFilter]) -> dict[str, Any]:
    """Compliance rate, top violations by path and code, and checks per day, from the aggregates."""
    if not caller(request).has_perm("governance.view_contractcheck"):
        raise Forbidden("This needs the governance.view_contractcheck permission.")
    contract = contracts.current(name)
    found = contracts.stats(contract_name=contract.name, since=filters.since)
    return {
        "contract": contract.name,
        "since": filters.since,
        "checks": found.checks,
        "compliant": found.compliant,
        "compliance_rate": found.compliance_rate,
        "violations": found.violations,
        "top_violations": found.top_paths,
        "per_day": found.per_day,
    }
