"""The kinds of review items, each declared by the app that opens it (after NetBox's registry).

The inbox is one queue for every kind, but only the app that opens a kind knows what its items
mean: the label reviewers read, the text they decide on, the template of its row, the buttons it
offers, and what a decision does. Each app registers its kinds in its ``AppConfig.ready()``;
``governance.reviews`` reads them here and never asks which kind an item is. A code no app
declares (an item from a removed app, a test's) still shows, approves and rejects generically.

Pure: no Django import runs here, so the registry is read the same in any process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from governance.kernel import registry
from governance.kernel.registry import Keyed, Slot

if TYPE_CHECKING:
    from agents.models import Agent
    from governance.reviews.models import ReviewDecision, ReviewItem

# The decisions a reviewer's button posts (the values of ReviewDecision.Decision).
APPROVE, REJECT, ANSWER = "approve", "reject", "answer"
GENERIC_TEMPLATE = "governance/reviews/review_kinds/generic.html"

Payload = Mapping[str, Any]
DecisionHandler = Callable[["ReviewItem", "ReviewDecision"], None]
# (the item's payload, the reviewer's edit) -> the payload approved instead.
Amendment = Callable[[Payload, Any], dict[str, Any]]


@dataclass(frozen=True)
class Control:
    """One button of an item's decision controls: the decision it posts, with ``answer`` for an
    answer, in the words and colour (``style``: approve, reject or answer) the reviewer sees."""

    decision: str
    label: str
    style: str
    answer: str = ""


def always(*controls: Control) -> Callable[[Payload], tuple[Control, ...]]:
    """The ``controls`` of a kind whose buttons are the same for every item."""

    def controls_of(payload: Payload) -> tuple[Control, ...]:
        return controls

    return controls_of


def payload_field(name: str) -> Callable[[Payload], str]:
    """A ``summary`` that is one field of the payload, as text (empty when it has none)."""

    def summary(payload: Payload) -> str:
        return str(payload.get(name) or "")

    return summary


def _approve_or_reject(payload: Payload) -> tuple[Control, ...]:
    return (Control(APPROVE, "Approve", "approve"), Control(REJECT, "Reject", "reject"))


def _no_summary(payload: Payload) -> str:
    return ""


def _no_options(payload: Payload) -> tuple[str, ...] | None:
    return None


def _no_details(payload: Payload) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class ReviewKind:
    """What the inbox knows of one kind of item.

    * ``summary``: what the reviewer decides on, as one text (empty when the row shows facts);
    * ``template``: the row's body, read with the item as ``item``;
    * ``details``: what that template reads besides the payload, worked out from it;
    * ``controls``: the buttons a pending item offers; the inbox refuses an approval or an answer
      none of them posts (a rejection is always accepted);
    * ``options``: the options of a question, which the API's ``answer`` accepts; None when the
      item asks none (its answer buttons, if any, are the inbox's only);
    * ``on_decided``: what a decision does, run in the decision's transaction;
    * ``expires_itself``: the app closes the kind's items at their deadline on its own terms, so
      ``reviews.expire_due`` leaves them to it;
    * ``announces_as``: the notification event (``EventKind``) a new item is announced as; None
      for kinds that announce themselves as their own event, or not at all;
    * ``bulk``: may be decided with others (selected, or all matching the filters), each item still
      on its own terms; False for a kind a reviewer must read item by item;
    * ``asked_by_agent``: an agent asks a human with it (a tool call, an approval, an action
      approval, a question), so an item opened for an agent counts against that agent's pending
      limit (``PENDING_ASKS``); the kinds the platform opens on its own account do not;
    * ``amend``: for a kind a reviewer may edit as they approve it (a tool call's arguments):
      given the item's payload and the reviewer's edit, the payload approved instead (equal to the
      item's when nothing changed), or InvalidInput naming the failing path. None: approved as it is.
    """

    code: str
    label: str
    template: str = GENERIC_TEMPLATE
    summary: Callable[[Payload], str] = _no_summary
    details: Callable[[Payload], dict[str, Any]] = _no_details
    controls: Callable[[Payload], tuple[Control, ...]] = _approve_or_reject
    options: Callable[[Payload], tuple[str, ...] | None] = _no_options
    on_decided: DecisionHandler | None = None
    expires_itself: bool = False
    announces_as: str | None = None
    bulk: bool = True
    asked_by_agent: bool = False
    amend: Amendment | None = None

    def answers(self, payload: Payload) -> tuple[str, ...]:
        """The answers the item's buttons post; empty when it is approved or rejected only."""
        return tuple(control.answer for control in self.controls(payload) if control.decision == ANSWER)

    def approvable(self, payload: Payload) -> bool:
        """Whether a button approves the item (a question is answered, never approved)."""
        return any(control.decision == APPROVE for control in self.controls(payload))


KINDS: Keyed[ReviewKind] = registry.keyed("review_kinds", "what each kind of inbox item means, by its code")
# Admits one more item of an ``asked_by_agent`` kind for an agent, or raises RateLimited: the
# limit is the agent's (its manifest's quota, else the setting), which only the agents app knows.
PENDING_ASKS: Slot[Callable[[Agent], None]] = registry.slot(
    "pending_asks", "admits one more pending item an agent asks a human with (agents: its quota)"
)


def register(kind: ReviewKind) -> None:
    """Called from an AppConfig.ready(). One declaration per code: a second, different one for a
    code already taken is a programming error, raised at start rather than shown wrong."""
    KINDS.register(kind.code, kind)


def generic_label(code: str) -> str:
    """The words of a code no app declares: ``memory_promotion`` reads "Memory promotion"."""
    return code.replace("_", " ").replace(".", " ").capitalize()


def get(code: str) -> ReviewKind:
    """The declared kind, or a generic one for a code no app declares (decided one by one: nobody
    said what deciding many of them means)."""
    return KINDS.find(code) or ReviewKind(code=code, label=generic_label(code), bulk=False)


def all() -> tuple[ReviewKind, ...]:
    """Every declared kind, in the order the apps registered them."""
    return KINDS.values()
