"""Which Celery queue each task goes to, so a worker can take only its kind of work.

Four queues beside the default one: a million embeddings waiting in ``embeddings`` must never
delay the scheduler tick in ``tick``, and a slow model provider must never hold up either. A task
not listed here goes to the default queue (the heartbeat does, on purpose: it proves the plain
path from beat to a worker). ``tests/governance/kernel/test_queues.py`` fails when a task is added without
a decision here.

Every queue's real name starts with the instance's default queue (``CELERY_QUEUE``), so two
installations sharing a broker never take each other's work: ``governance-1a2b3c4d.tick``,
``governance-1a2b3c4d.embeddings``... Unset, the default queue names the instance
(``instance_queue``): two checkouts on one host, both finding the same local Redis, each keep
their own tasks. The router reads the default queue when a task is sent, so a process
that sends elsewhere for a while (a test) routes with it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

TICK = "tick"
EMBEDDINGS = "embeddings"
PROVIDERS = "providers"
MAINTENANCE = "maintenance"
DEFAULT = "default"
KINDS = (DEFAULT, TICK, PROVIDERS, EMBEDDINGS, MAINTENANCE)


def instance_queue(var_dir: Path) -> str:
    """The default CELERY_QUEUE: ``governance-`` and a short hash of the instance's data directory
    (its database and files), the same at every start of that instance and different for any other."""
    return f"governance-{hashlib.sha256(str(var_dir).encode()).hexdigest()[:8]}"


# What an operator waits on (the slot, timers, deadlines, triggers); calls to the world outside
# (model providers, notification receivers), whose slowness is theirs; what can wait.
ROUTES: dict[str, str] = {
    "sessions.tick": TICK,
    "sessions.tick_agent": TICK,
    "sessions.fire_timer": TICK,
    "sessions.phase_deadline": TICK,
    "sessions.simulate_actions": TICK,
    "agents.sweep_jobs": TICK,
    "agents.fire_due_triggers": TICK,
    "agents.escalation_timeouts": TICK,
    "reviews.expire_due": TICK,  # deadlines: a late approval must not be usable
    "sessions.call_provider": PROVIDERS,
    "gateway.list_stdio_tools": PROVIDERS,  # stdio upstreams run in workers; an agent waits on them
    "gateway.call_stdio_tool": PROVIDERS,
    "notifications.deliver": PROVIDERS,
    "notifications.resend_due": PROVIDERS,
    "notifications.send_digests": PROVIDERS,
    "memory.embed": EMBEDDINGS,
    "memory.embed_missing": EMBEDDINGS,
    "memory.compute_reuse_scores": MAINTENANCE,
    "memory.full_scoring": MAINTENANCE,
    "memory.promote": MAINTENANCE,
    "memory.evict": MAINTENANCE,
    "memory.tune_search": MAINTENANCE,
    "agents.recheck_kpi_alerts": MAINTENANCE,
    "governance.retention": MAINTENANCE,
}
# Deliberately on the default queue.
UNROUTED = frozenset({"governance.heartbeat"})

# The worker groups `serve` starts when no queues are named: latency-sensitive work in one, bulk work
# (which may hold both of a small host's cores for minutes) in another with its own concurrency.
INTERACTIVE = (DEFAULT, TICK, PROVIDERS)
BULK = (EMBEDDINGS, MAINTENANCE)


def queue_name(prefix: str, kind: str) -> str:
    """The broker's name for a kind of queue: the default queue is the prefix itself."""
    return prefix if kind == DEFAULT else f"{prefix}.{kind}"


def parse_kinds(text: str) -> tuple[str, ...]:
    """``tick,embeddings`` -> the kinds, in order, each once; ValueError names an unknown one."""
    kinds = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"unknown queue {', '.join(unknown) or '(none)'}; choose among {', '.join(KINDS)}")
    return kinds


def route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **extra: Any) -> dict[str, str]:
    """Celery's router (``task_routes``): the queue of ``name`` under the current default queue."""
    from celery import current_app

    return {"queue": queue_name(current_app.conf.task_default_queue, ROUTES.get(name, DEFAULT))}
