"""Every audit row names its action with a member of ``AuditAction``, never with text.

A name typed (or built with an f-string) at a call site is one no filter lists and no grep finds,
and a typo in it writes rows nobody will ever look up: the test reads every product module's
syntax tree (no Django needed for that part) and names the offending line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from governance.kernel.audit import AuditAction
from tests.governance.test_architecture import PACKAGES, ROOT

# The calls that write an audit row and take its action as ``action=``.
WRITERS = {"record", "record_refusal"}


def _writes_audit(call: ast.Call) -> bool:
    """``record(...)``, ``services.record(...)``, ``record_refusal(...)`` or ``AuditEvent.objects.create(...)``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in WRITERS:
        return True
    return (
        name == "create"
        and isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "objects"
        and getattr(func.value.value, "id", "") == "AuditEvent"
    )


def text_actions(tree: ast.AST, where: str) -> Iterator[str]:
    """``file:line`` of each audit write whose ``action=`` holds a string literal or an f-string
    (in a conditional expression too)."""
    for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
        if not _writes_audit(call):
            continue
        for keyword in call.keywords:
            if keyword.arg != "action":
                continue
            if any(
                isinstance(part, ast.JoinedStr) or (isinstance(part, ast.Constant) and isinstance(part.value, str))
                for part in ast.walk(keyword.value)
            ):
                yield f"{where}:{call.lineno}: {ast.unparse(keyword.value)}"


def test_no_audit_write_names_its_action_with_text() -> None:
    found: list[str] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            found += text_actions(ast.parse(path.read_text(), str(path)), str(path.relative_to(ROOT)))
    assert found == [], "name these actions with an AuditAction member"


def test_the_check_sees_a_literal_and_an_f_string() -> None:
    source = (
        "record(actor=a, action='job.done', target=t)\n"
        "services.record(actor=a, action=f'job.{status}', target=t)\n"
        "AuditEvent.objects.create(actor='x', action='x.y' if c else AuditAction.JOB_FAILED)\n"
        "record(actor=a, action=AuditAction.JOB_FAILED, target=t)\n"
        "parser.add_argument('--dry-run', action='store_true')\n"
    )
    assert [hit.split(":")[1] for hit in text_actions(ast.parse(source), "m.py")] == ["1", "2", "3"]


def test_each_action_has_its_own_value() -> None:
    """An Enum member with the value of another is silently an alias of it: two names, one action."""
    assert len(AuditAction.__members__) == len(list(AuditAction))


def test_each_action_reads_domain_dot_verb() -> None:
    odd = [action.value for action in AuditAction if not re.fullmatch(r"[a-z_]+\.[a-z_]+", action.value)]
    assert odd == []
