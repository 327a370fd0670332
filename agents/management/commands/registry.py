"""`manage.py registry add|label|retire|list`: the registries of domains, intents, entity types and
roles from a shell, through the service the API and the admin use.

    manage.py registry add intents summarize_ticket --label "Summarize a ticket" --actor alice
    manage.py registry label intents summarize_ticket "Summarize one ticket" --actor alice
    manage.py registry retire intents summarize_ticket --actor alice
    manage.py registry list [intents]

Like the other commands, it acts as the system (audit rows say ``system``) unless ``--actor``
names the person at the shell: then the rows name them, and their account needs the registry's
permission, as on the API."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import registries
from agents.vocabulary import Registry
from governance.kernel.exceptions import DomainError, InvalidInput
from governance.kernel.principals import SYSTEM, Principal

NAMES = ", ".join(registry.value for registry in Registry)


class Command(BaseCommand):
    help = f"Add, relabel, retire or list the values of the registries ({NAMES})."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="add a value (a retired one is reinstated)")
        add.add_argument("registry", help=NAMES)
        add.add_argument("value", help="a lowercase slug, e.g. summarize_ticket")
        add.add_argument("--label", help="what pages show (default: the value, capitalised)")
        label = actions.add_parser("label", help="give a value another label")
        label.add_argument("registry", help=NAMES)
        label.add_argument("value")
        label.add_argument("label")
        retire = actions.add_parser("retire", help="refuse new use of a value; what has it keeps it")
        retire.add_argument("registry", help=NAMES)
        retire.add_argument("value")
        listing = actions.add_parser("list", help="every value, retired ones marked")
        listing.add_argument("registry", nargs="?", help=f"one of {NAMES} (default: all)")
        for sub in (add, label, retire):
            sub.add_argument("--actor", metavar="USERNAME", help="the operator acting (default: the system)")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            registry = registries.registry_named(options["registry"]) if options.get("registry") else None
            if action == "list":
                self._list(registry)
                return
            assert registry is not None  # the subcommand requires it
            actor = self._actor(options.get("actor"))
            value = options["value"]
            if action == "add":
                entry, outcome = registries.add_value(registry, value, label=options.get("label"), actor=actor)
            elif action == "label":
                entry = registries.relabel_value(registry, value, options["label"], actor=actor)
                outcome = f"labelled {entry.label!r}"
            else:
                entry = registries.retire_value(registry, value, actor=actor)
                outcome = "retired"
        except InvalidInput as exc:
            raise CommandError(exc.summary()) from exc
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(f"{registry} {entry.value}: {outcome}")

    def _actor(self, username: str | None) -> Principal:
        if not username:
            return SYSTEM
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user {username!r}.")
        return Principal(user=user)

    def _list(self, registry: Registry | None) -> None:
        for name, entries in registries.listing([registry] if registry else list(Registry)).items():
            self.stdout.write(f"{name}:")
            for entry in entries:
                marker = "  (retired)" if entry.retired else ""
                self.stdout.write(f"  {entry.value:<30} {entry.label}{marker}")
