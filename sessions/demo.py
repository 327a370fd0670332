"""Demo sessions: chats in several phases (two waiting for a reviewer), and a hosted scripted
automation of the architect that runs every 15 minutes under `make run` and asks a reviewer to
approve its action each time, so the inbox fills itself; its actions are simulated, and say so.
Everything goes through the processor, as an agent's events would.

Safe to run again: nothing is created when the demo agents already have sessions.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from django.utils import timezone

from agents.models import Agent
from governance.kernel.principals import SYSTEM, Principal
from sessions import automations, profiles, scheduler
from sessions.machine import Event
from sessions.models import AISession, Automation, ProviderProfile
from sessions.processor import apply_event

SNAPSHOT = "mcp__chrome-devtools__take_snapshot"
ISSUE = "mcp__github__create_issue"
DEMO_PROFILE = "demo-scripted"


def _ai(**message: Any) -> dict[str, Any]:
    return {"content": json.dumps(message), "tokens": {"input": 1200, "output": 180, "cacheRead": 900}}


def _chat(agent: Agent, name: str, steps: list[tuple[Event, dict[str, Any]]]) -> AISession:
    session = scheduler.start_chat(agent, actor=Principal(agent=agent), name=name, require_validation=False)
    for event, payload in steps:
        apply_event(session.pk, event, payload, actor=Principal(agent=agent))
    return session


def _say(text: str) -> tuple[Event, dict[str, Any]]:
    return Event.USER_MESSAGE_SENT, {"text": text}


def load(out: TextIO) -> None:
    agents = {a.agent_id: a for a in Agent.objects.filter(agent_id__startswith="agent.")}
    vlevel, indexer, architect = (
        agents.get(k) for k in ("agent.seo.vlevel", "agent.rag.indexer", "agent.seo.architect")
    )
    if None in (vlevel, indexer, architect) or AISession.objects.filter(agent__in=agents.values()).exists():
        return
    # Finished conversations first (each new chat suspends the previous one of its agent).
    _chat(
        indexer,
        "Reindex status",
        [
            _say("How did last night's reindex go?"),
            (Event.AI_RESPONSE_RECEIVED, _ai(preText="Let me check.", dataCommands=[{"type": "JOBS", "params": {}}])),
            (Event.AI_RESPONSE_RECEIVED, _ai(preText="Two reindex jobs ran; one failed INDEX_OVERCOUNT.")),
        ],
    )
    _chat(
        indexer,
        "Which documents next?",
        [
            _say("Which catalogue should I reindex next?"),
            (
                Event.AI_RESPONSE_RECEIVED,
                _ai(
                    preText="I can start with one of these.",
                    communicationModule={
                        "type": "MultipleChoice",
                        "data": {"question": "Which catalogue first?", "options": ["Brakes", "Lighting", "Tyres"]},
                    },
                ),
            ),
        ],
    )
    _chat(
        vlevel,
        "Snapshot the brake pages",
        [
            _say("Take a snapshot of the brake pads page before we change it."),
            (
                Event.AI_RESPONSE_RECEIVED,
                _ai(
                    preText="I will snapshot the page first.",
                    postText="Snapshot stored.",
                    actionCommands=[{"type": SNAPSHOT, "params": {"url": "https://shop.example.com/brake-pads"}}],
                ),
            ),
        ],
    )
    _hosted_automation(architect)
    out.write("Demo sessions: 3 chats (2 waiting for a reviewer), 1 hosted automation every 15 minutes\n")


def _hosted_automation(architect: Agent) -> None:
    """Through the services, as the system: only server-side code may set up a scripted profile,
    and the actions it "runs" are reported as simulated."""
    failed_jobs = [{"type": "JOBS", "params": {"status": "failed"}}]
    open_issue = [{"type": ISSUE, "params": {"title": "Review failed jobs"}}]
    script = [
        json.dumps({"preText": "Looking at failed jobs.", "dataCommands": failed_jobs}),
        json.dumps({"preText": "Opening an issue.", "postText": "Issue opened.", "actionCommands": open_issue}),
        json.dumps({"preText": "Done for this round.", "completed": True}),
    ]
    profile = ProviderProfile.objects.filter(name=DEMO_PROFILE).first() or profiles.create_profile(
        actor=SYSTEM,
        name=DEMO_PROFILE,
        provider=ProviderProfile.Provider.SCRIPTED,
        options={"responses": script, "simulate_actions": True},
    )
    # Due now: its first run starts as soon as a worker takes the tick, and asks a reviewer.
    automations.create_automation(
        architect,
        actor=SYSTEM,
        name="Failed jobs review",
        trigger=Automation.Trigger.SCHEDULED,
        interval_minutes=15,
        messages=[{"text": "Review the failed jobs and open issues."}],
        profile_name=profile.name,
        first_run_at=timezone.now(),
    )
