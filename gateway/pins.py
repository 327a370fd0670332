"""The rug-pull lock: agents see an upstream tool only as an operator approved it.

An upstream server can change a tool's description or schema after an operator registered it,
and every agent's model would read the new text at its next ``tools/list``. So each definition
is pinned by its digest (gateway/drift.py) and every listing is compared with the pins before an
agent sees it (``admitted``):

* The tools a server lists first, once an operator registered it, are pinned under that
  registration, but a definition gateway/poison.py flags, which waits for a reviewer even then.
* After that, a definition that changes, a tool that appears and a tool that disappears are
  withheld from every agent and their calls refused (``DefinitionChanged``) before anything is
  forwarded. Each such change opens one item in the reviewer inbox with the diff and the
  findings, however many listings see it; approving it pins the new definition (or the removal),
  rejecting it keeps it withheld.

Every step is audited: withheld (the system), pinned and rejected (the reviewer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import mcp_types as types
from django.db import IntegrityError, transaction
from django.utils import timezone

from gateway import drift, poison
from gateway.models import ToolPin, UpstreamServer
from governance.kernel.audit import AuditAction
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.notifications.models import EventKind
from governance.reviews import services as reviews
from governance.reviews.kinds import ReviewKind
from governance.reviews.models import ReviewDecision, ReviewItem

REVIEW_KIND = "gateway.tool_definition"
REFUSAL = "DefinitionChanged"
Status = ToolPin.Status
WAITING = (Status.PENDING, Status.FLAGGED)
_KNOWN = (Status.PENDING, Status.FLAGGED, Status.REJECTED)  # what a listing never opens again


@dataclass(frozen=True)
class Listed:
    """One listed tool: its pinned fields, their digest."""

    definition: dict[str, Any]
    digest: str


def listed(tools: Iterable[types.Tool]) -> dict[str, Listed]:
    """Each tool of a listing by name, as the lock compares it."""
    found = {}
    for tool in tools:
        shown = drift.storable(drift.definition(tool.model_dump(mode="json", by_alias=True, exclude_none=True)))
        found[shown["name"]] = Listed(shown, drift.digest(shown))
    return found


def _state(server: UpstreamServer) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """(tool -> approved digest, the (tool, digest) pairs waiting or rejected): one query."""
    rows = (
        ToolPin.objects.filter(server=server).exclude(status=Status.SUPERSEDED).values_list("tool", "sha256", "status")
    )
    approved = {tool: digest for tool, digest, status in rows if status == Status.APPROVED}
    return approved, {(tool, digest) for tool, digest, status in rows if status in _KNOWN}


def admitted(server: UpstreamServer, tools: list[types.Tool]) -> list[types.Tool]:
    """The tools of a complete listing of ``server`` whose definition is the approved one, as
    an agent may be shown them (the pinned fields only). What differs is recorded once: pinned
    under the registration at the server's first listing, else withheld for a reviewer."""
    found = listed(tools)
    approved, known = _state(server)
    first = server.pinned_at is None  # even an empty first listing is the one the registration approves
    plan = drift.plan({name: one.digest for name, one in found.items()}, approved, known, first=first)
    names = _record(server, found) if plan.changes or first else plan.admitted
    return [types.Tool.model_validate(found[name].definition) for name in sorted(names)]


def _registrar(server: UpstreamServer) -> str:
    """Who registered the server (its audit row), which the first listing is pinned under."""
    added = AuditEvent.objects.filter(
        action=AuditAction.GATEWAY_UPSTREAM_ADDED,
        target_type=UpstreamServer._meta.label_lower,
        target_id=str(server.pk),
    ).first()
    return added.actor if added is not None else "the operator who registered it"


def _record(server: UpstreamServer, found: dict[str, Listed]) -> frozenset[str]:
    """Record the listing's changes under the server's lock (listings of several processes at
    once are recorded once), and return the tools admitted after it."""
    with transaction.atomic():
        locked = UpstreamServer.objects.select_for_update().get(pk=server.pk)
        approved, known = _state(locked)
        first = locked.pinned_at is None
        plan = drift.plan({name: one.digest for name, one in found.items()}, approved, known, first=first)
        pinned = set()
        for change in plan.changes:
            shown = found[change.tool].definition if change.tool in found else None
            if _pin(locked, change, shown, approved):
                pinned.add(change.tool)
        if first:
            locked.pinned_at = timezone.now()
            locked.save(update_fields=["pinned_at"])
        return plan.admitted | pinned


def _pin(server: UpstreamServer, change: drift.Change, shown: dict[str, Any] | None, approved: dict[str, str]) -> bool:
    """Record one change: pinned at once (the server's first listing, nothing flagged), or
    withheld with one review item. True when pinned."""
    findings = [finding.as_dict() for finding in poison.scan(shown)] if shown is not None else []
    previous = (
        ToolPin.objects.filter(server=server, tool=change.tool, status=Status.APPROVED).first()
        if change.tool in approved
        else None
    )
    now = timezone.now()
    if change.kind == drift.FIRST and not findings:
        pin = ToolPin.objects.create(
            server=server,
            tool=change.tool,
            change=change.kind,
            definition=shown,
            sha256=change.digest,
            status=Status.APPROVED,
            approved_by=f"{_registrar(server)} (registration)",
            approved_at=now,
        )
        record(actor=SYSTEM, action=AuditAction.GATEWAY_DEFINITION_PINNED, target=pin, **_facts(pin))
        return True
    try:
        with transaction.atomic():  # a row of the same change by a process that held no lock
            pin = ToolPin.objects.create(
                server=server,
                tool=change.tool,
                change=change.kind,
                definition=shown,
                sha256=change.digest,
                findings=findings,
                status=Status.FLAGGED if findings else Status.PENDING,
                previous=previous,
            )
    except IntegrityError:
        return False
    pin.review_item = reviews.open_item(
        actor=SYSTEM, kind=REVIEW_KIND, title=_title(server, pin), payload=_payload(server, pin, previous)
    )
    pin.save(update_fields=["review_item"])
    record(
        actor=SYSTEM,
        action=AuditAction.GATEWAY_DEFINITION_WITHHELD,
        target=pin,
        review_item=pin.review_item.pk,
        findings=len(findings),
        **_facts(pin),
    )
    return False


def _facts(pin: ToolPin) -> dict[str, Any]:
    return {"server": pin.server.name, "tool": pin.tool, "change": pin.change, "sha256": pin.sha256}


_VERBS = {
    drift.FIRST: "listed at registration and flagged",
    drift.ADDED: "added",
    drift.CHANGED: "changed",
    drift.REMOVED: "removed",
}


def _title(server: UpstreamServer, pin: ToolPin) -> str:
    flagged = " (flagged)" if pin.findings and pin.change != drift.FIRST else ""
    return f"Upstream tool mcp__{server.name}__{pin.tool} {_VERBS[pin.change]}{flagged}"


def _payload(server: UpstreamServer, pin: ToolPin, previous: ToolPin | None) -> dict[str, Any]:
    """What the reviewer reads and decides on: both definitions, their diff, the findings."""
    old = previous.definition if previous is not None else None
    return {
        "pin": pin.pk,
        "server": server.name,
        "tool": pin.tool,
        "toolId": f"mcp__{server.name}__{pin.tool}",
        "change": pin.change,
        "changedFields": drift.changed_fields(old, pin.definition),
        "diff": [poison.reveal(line) for line in drift.diff(old, pin.definition)],
        "previous": old,
        "previousSha256": previous.sha256 if previous is not None else None,
        "definition": pin.definition,
        "sha256": pin.sha256,
        "findings": pin.findings,
    }


def on_review_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    """The reviewer's decision, in its transaction: an approval pins the definition (the one
    approved before is superseded, kept), anything else leaves it withheld. Audited with the
    reviewer as actor."""
    pin = ToolPin.objects.select_for_update().select_related("server").filter(review_item=item).first()
    if pin is None or pin.status not in WAITING:
        return
    actor = Principal(user=decision.user) if decision.user is not None else SYSTEM
    UpstreamServer.objects.select_for_update().filter(pk=pin.server_id).first()
    if decision.decision == ReviewDecision.Decision.APPROVE:
        ToolPin.objects.filter(server_id=pin.server_id, tool=pin.tool, status=Status.APPROVED).update(
            status=Status.SUPERSEDED
        )
        pin.status, pin.approved_by, pin.approved_at = Status.APPROVED, actor.label, decision.decided_at
        pin.save(update_fields=["status", "approved_by", "approved_at"])
        record(
            actor=actor, action=AuditAction.GATEWAY_DEFINITION_PINNED, target=pin, review_item=item.pk, **_facts(pin)
        )
    else:
        pin.status = Status.REJECTED
        pin.save(update_fields=["status"])
        record(
            actor=actor, action=AuditAction.GATEWAY_DEFINITION_REJECTED, target=pin, review_item=item.pk, **_facts(pin)
        )


def _summary(payload: Mapping[str, Any]) -> str:
    changed = ", ".join(payload.get("changedFields") or []) or "nothing a model reads"
    findings = len(payload.get("findings") or [])
    said = f"{payload.get('toolId', '')}: {_VERBS.get(payload.get('change', ''), '')} ({changed})"
    return said + (f"; {findings} finding(s) of text aimed at the model" if findings else "")


REVIEW = ReviewKind(
    code=REVIEW_KIND,
    label="Upstream tool definition",
    template="gateway/review_kinds/tool_definition.html",
    summary=_summary,
    on_decided=on_review_decided,
    announces_as=EventKind.INBOX_TOOL_APPROVAL,
    bulk=False,  # a changed definition may carry text aimed at the model: each one is read
)


@dataclass(frozen=True)
class PinState:
    """A tool's lock as the servers page shows it: ``state`` is approved, pending, flagged,
    rejected, unpinned (its first listing not recorded yet) or removed (approved, not listed)."""

    tool: str
    state: str
    approved_by: str = ""
    approved_at: datetime | None = None
    review_item: int | None = None
    findings: int = 0


def _board(rows: list[ToolPin], tools: list[types.Tool]) -> list[PinState]:
    approved = {row.tool: row for row in rows if row.status == Status.APPROVED}
    others = {(row.tool, row.sha256): row for row in rows if row.status != Status.APPROVED}
    found = listed(tools)
    states = []
    for name, one in sorted(found.items()):
        pin, other = approved.get(name), others.get((name, one.digest))
        if pin is not None and pin.sha256 == one.digest:
            states.append(PinState(name, "approved", pin.approved_by, pin.approved_at))
        elif other is not None:
            states.append(PinState(name, other.status, review_item=other.review_item_id, findings=len(other.findings)))
        else:
            states.append(PinState(name, "unpinned"))
    for name, pin in sorted(approved.items()):
        if pin.sha256 != drift.ABSENT and name not in found:
            removal = others.get((name, drift.ABSENT))
            states.append(PinState(name, "removed", review_item=removal.review_item_id if removal else None))
    return states


def boards(listings: dict[int, list[types.Tool]]) -> dict[int, list[PinState]]:
    """The lock of each tool of each listed server (server id -> its listing), and of each
    approved tool a listing lacks, in one query. Reads only: a page never records a change."""
    rows: dict[int, list[ToolPin]] = {pk: [] for pk in listings}
    for row in ToolPin.objects.filter(server_id__in=list(listings)).exclude(status=Status.SUPERSEDED):
        rows[row.server_id].append(row)
    return {pk: _board(rows[pk], tools) for pk, tools in listings.items()}
