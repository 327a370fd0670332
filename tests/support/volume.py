"""A reviewer's day in the inbox: 200 pending items of the kinds an operator meets, spread over a
dozen agents. Tool-call approvals are asked the way agents ask them (``agents.tools.record_call`` of
seed 001's approval-gated tool, so each has its grant); the other kinds are opened in the shapes
their apps write (action approvals, questions, learning promotions, escalations). The browser
tests and ``bench/inbox.py`` read the same inbox, so the note's numbers are measured on what the
tests drive."""

from __future__ import annotations

import itertools
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from agents import tools
from agents.models import Agent
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewItem

AGENTS = 12  # 200 items within the per-agent pending limit (AGENT_MAX_PENDING_APPROVALS, 20)
# The mix the issue measured: 168 tool-call approvals and validation requests, 32 promotions, plus
# the kinds it lists for bulk decisions (questions with a common answer, escalations).
MIX = (
    ("tool_approval", 100),
    ("session_validation", 56),
    ("session_communication", 8),
    ("learning_promotion", 28),
    ("escalation", 8),
)
OPTIONS = ["staging", "production"]


GATED_TOOL = "mcp__chrome-devtools__take_snapshot"  # requires approval in seed 001's manifest


def agents_of(manifest: str) -> list[Agent]:
    """``AGENTS`` agents running the shipped manifest ``manifest`` (an agents/manifests/ YAML text)."""
    loaded = []
    for n in range(AGENTS):
        text = manifest.replace("agent.seo.vlevel", f"agent.seo.worker_{n:02d}")
        loaded.append(load_manifest(text, actor=SYSTEM)[0].agent)
    return loaded


def _tool_call(agent: Agent, n: int) -> ReviewItem:
    arguments = {"url": f"https://shop.example.com/catalog/page-{n}?utm_source=newsletter", "fullPage": True}
    pending = tools.record_call(agent, GATED_TOOL, actor=Principal(agent=agent), arguments=arguments)
    assert isinstance(pending, tools.PendingApproval)
    return ReviewItem.objects.get(pk=pending.review_item_id)


def _payload(kind: str, n: int) -> tuple[str, dict]:
    if kind == "session_validation":
        command = {"type": "mcp__shop__refund_order", "parameters": {"orderId": f"O-{n}", "amount": 19.9}}
        payload = {
            "session": f"00000000-0000-0000-0000-{n:012d}",
            "actionCommands": [command],
            "validationContext": {"actions": [f"Refund order O-{n} (19.90 EUR)"], "reasons": ["refunds need a human"]},
        }
        return f"Refund order O-{n}", payload
    if kind == "session_communication":
        module = {"type": "MultipleChoice", "data": {"question": f"Deploy build {n} where?", "options": OPTIONS}}
        return f"Deploy build {n} where?", {"session": f"10000000-0000-0000-0000-{n:012d}", "module": module}
    if kind == "learning_promotion":
        text = f"Story VOL-{n}: canonical tags must be absolute URLs"
        return f"Promote a story learning of VOL-{n} to domain", {"from": "story", "to": "domain", "text": text}
    payload = {"job": f"20000000-0000-0000-0000-{n:012d}", "triggers": ["confidence < 0.6"], "output": {"n": n}}
    return f"Escalation of job {n}", payload


def mixed_inbox(agents: list[Agent]) -> list[ReviewItem]:
    """200 pending items, interleaved by kind as they would arrive, each from one of ``agents``
    (promotions have none), in the order they were opened."""
    queue = [kind for kind, count in MIX for _ in range(count)]
    order = sorted(range(len(queue)), key=lambda i: (i * 7919) % len(queue))  # a fixed shuffle
    items = []
    cycle = itertools.cycle(agents)
    for n, index in enumerate(order):
        kind = queue[index]
        agent = None if kind == "learning_promotion" else next(cycle)
        if kind == "tool_approval":
            assert agent is not None  # only promotions come without one
            items.append(_tool_call(agent, n))
            continue
        title, payload = _payload(kind, n)
        expires = timezone.now() + timedelta(hours=24) if kind != "learning_promotion" else None
        with transaction.atomic():  # as the apps open them: inside their own transaction
            item = reviews.open_item(
                actor=SYSTEM, kind=kind, title=title, payload=payload, agent=agent, expires_at=expires
            )
        items.append(item)
    return items
