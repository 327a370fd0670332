"""Issue an API key for one agent or one user and print it once.

Shell access is superuser-level, so the command mints for anyone; an operator key it mints
records the command as its minter, and everything done with it names both."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import Agent
from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key

MINTER = "command:create_api_key"


class Command(BaseCommand):
    help = "Create an API key bound to an agent (--agent) or an operator account (--user); prints it once."

    def add_arguments(self, parser: CommandParser) -> None:
        owner = parser.add_mutually_exclusive_group(required=True)
        owner.add_argument("--agent", metavar="ID", help="agent id, e.g. agent.seo.vlevel")
        owner.add_argument("--user", metavar="NAME", help="username of the operator")
        parser.add_argument("--name", default="", help="what the key is for (default: created from the CLI)")

    def handle(self, *args: object, agent: str | None, user: str | None, name: str, **options: object) -> None:
        owner_agent = owner_user = None
        if agent:
            owner_agent = Agent.objects.filter(agent_id=agent).first()
            if owner_agent is None:
                raise CommandError(f"No agent {agent!r}.")
        else:
            owner_user = get_user_model().objects.filter(username=user).first()
            if owner_user is None:
                raise CommandError(f"No user {user!r}.")
        api_key, plain = issue_api_key(
            actor=SYSTEM,
            name=name or "created from the command line",
            agent=owner_agent,
            user=owner_user,
            minted_by=MINTER,
        )
        self.stderr.write(f"Key {api_key.prefix} for {api_key.kind} {api_key.owner_label}; it will not be shown again:")
        self.stdout.write(plain)
