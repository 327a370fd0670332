"""Demo credentials: the `admin` and `reviewer` accounts, one API key per demo agent, and an
operator key for `admin` (the README's first curl calls the API as an operator).

They are made once, when `load_demo` starts on an empty database (no user and no agent yet),
printed that one time and written to ``var/demo-credentials.txt`` (mode 0600) for the operator
to find later. Every later start leaves passwords, superuser flags and keys alone and prints only
where the file is: resetting them at each start, as the demo once did, handed a working
superuser password to whoever could read the terminal or its logs, undid an operator's password
change, and revoked keys agents were using.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from agents.models import Agent
from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key

FILE_NAME = "demo-credentials.txt"


@dataclass(frozen=True)
class DemoAccount:
    username: str
    group: str
    superuser: bool


DEMO_ACCOUNTS = (DemoAccount("admin", "Admin", True), DemoAccount("reviewer", "Reviewer", False))
OPERATOR = "admin"  # the demo account the operator key belongs to


def credentials_file() -> Path:
    return Path(settings.VAR_DIR) / FILE_NAME


def is_empty_install() -> bool:
    """True before anything was made on this database: the only time demo credentials are created."""
    return not get_user_model().objects.exists() and not Agent.objects.exists()


def create(agent_ids: tuple[str, ...], out: TextIO) -> None:
    """Create the demo accounts and one key per demo agent; print them and save them to the file."""
    lines = ["# Demo credentials, created once on the first start; change the passwords in the admin."]
    with transaction.atomic():
        user_model = get_user_model()
        users = {}
        for account in DEMO_ACCOUNTS:
            password = secrets.token_urlsafe(12)
            user = users[account.username] = user_model.objects.create_user(account.username, password=password)
            user.is_staff = True
            user.is_superuser = account.superuser
            user.save(update_fields=["is_staff", "is_superuser"])
            user.groups.add(Group.objects.get(name=account.group))
            lines.append(f"Demo account: {account.username} / {password} ({account.group})")
        _, plain = issue_api_key(actor=SYSTEM, name="demo operator", user=users[OPERATOR])
        lines.append(f"Demo operator key for {OPERATOR}: {plain}")
        for agent in Agent.objects.filter(agent_id__in=agent_ids).order_by("agent_id"):
            _, plain = issue_api_key(actor=SYSTEM, name="demo", agent=agent)
            lines.append(f"Demo agent key for {agent.agent_id}: {plain}")
    path = _write_private(credentials_file(), "\n".join(lines) + "\n")
    out.write("\n".join(lines[1:]) + f"\nDemo credentials saved to {path} (shown only this once).\n")


def saved_lines() -> list[str]:
    """The credentials the first start saved, as it printed them (the file's comment left out)."""
    return [line for line in credentials_file().read_text(encoding="utf-8").splitlines() if not line.startswith("#")]


def remind(out: TextIO) -> None:
    """A later start: say where the credentials are, never what they are."""
    path = credentials_file()
    if path.exists():
        out.write(f"Demo credentials: see {path} (created on the first start; not changed since).\n")
    else:
        out.write(
            "Demo credentials: none created (the database already had users or agents); "
            "use `manage.py createsuperuser` and `manage.py create_api_key`.\n"
        )


def _write_private(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` readable by this user only, replacing any older file whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(partial, 0o600)  # O_CREAT's mode is masked by the umask; an old partial file kept its own
    os.replace(partial, path)
    return path
