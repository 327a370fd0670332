"""Demo accounts (an administrator and a reviewer, with fresh passwords printed at each load) and
the contract catalog with two weeks of audited outputs of the demo agents (contract_demo.py)."""

from __future__ import annotations

import secrets
from typing import TextIO

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from governance import contract_demo

DEMO_ACCOUNTS = (
    ("admin", "Admin", True),
    ("reviewer", "Reviewer", False),
)


def load(out: TextIO) -> None:
    user_model = get_user_model()
    for username, group_name, superuser in DEMO_ACCOUNTS:
        user, _ = user_model.objects.get_or_create(username=username)
        password = secrets.token_urlsafe(9)
        user.set_password(password)
        user.is_staff = True
        user.is_superuser = superuser
        user.save()
        user.groups.add(Group.objects.get(name=group_name))
        out.write(f"Demo account: {username} / {password} ({group_name})\n")
    contract_demo.load(out)
