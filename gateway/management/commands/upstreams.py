"""`manage.py upstreams`: list, add, change, disable, enable and remove upstream MCP servers without
the admin.

Every change goes through ``gateway.services``, as the admin's form and the REST API do: the same
checks (the outbound guard on a URL, a stdio command the deployment allows, a credential named
never stored) and the same audit row, whose actor is the system (shell access is the host's
operator). Only a server agents never called is removed: the calls of one they did call are the
audit trail of what they did there, so it is disabled instead.
"""

from __future__ import annotations

from argparse import BooleanOptionalAction
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from gateway import services
from gateway.models import UpstreamServer
from governance.kernel.exceptions import Conflict, NotFound
from governance.kernel.principals import SYSTEM

# The fields `add` and `change` set, as the admin's form names them.
FIELDS = ("transport", "url", "internal", "command", "secret_name", "result_secrets")
DONE = {"add": "added", "change": "changed", "disable": "disabled", "enable": "enabled"}


class Command(BaseCommand):
    help = "List, add, change, disable, enable or remove upstream MCP servers (audited, as in the admin)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        actions.add_parser("list", help="every upstream server, one line each")
        for name in ("add", "change"):
            action = actions.add_parser(name, help=f"{name} an upstream server")
            action.add_argument("name", help="the server's name (tools are mcp__<name>__<tool>)")
            action.add_argument("--transport", choices=UpstreamServer.Transport.values, default=None)
            action.add_argument("--url", help="Streamable HTTP endpoint (https, unless --internal)")
            action.add_argument(
                "--internal", action=BooleanOptionalAction, default=None, help="a private-network server"
            )
            action.add_argument("--command", help="stdio: a command this deployment allows, by name")
            action.add_argument("--secret-name", help="environment variable holding its credential")
            action.add_argument(
                "--result-secrets",
                choices=UpstreamServer.ResultSecrets.values,
                default=None,
                help="secrets in a tool's result: redact them (the default), block the result, or only log them",
            )
        for name in ("disable", "enable"):
            actions.add_parser(name, help=f"{name} an upstream server").add_argument("name")
        actions.add_parser("remove", help="remove an upstream server agents never called").add_argument("name")

    def handle(self, *args: object, action: str, **options: Any) -> None:
        if action == "list":
            for server in UpstreamServer.objects.order_by("name"):
                address = server.url or f"stdio:{server.command}"
                state = "enabled" if server.enabled else f"disabled ({server.disabled_reason or 'by an operator'})"
                self.stdout.write(f"{server.name}\t{server.transport}\t{address}\t{state}")
            return
        name = options["name"]
        if action == "remove":
            try:
                services.remove_upstream(name, actor=SYSTEM)
            except (NotFound, Conflict) as exc:
                raise CommandError(exc.detail) from exc
            self.stdout.write(f"{name}: removed")
            return
        if action == "add":
            if UpstreamServer.objects.filter(name=name).exists():
                raise CommandError(f"An upstream server {name!r} exists already: use `change`.")
            server = UpstreamServer(name=name, transport=options.get("transport") or UpstreamServer.Transport.HTTP)
        else:
            found = UpstreamServer.objects.filter(name=name).first()
            if found is None:
                raise CommandError(f"No upstream server {name!r}.")
            server = found
        changed = self._apply(server, action, options)
        if not changed and action != "add":
            self.stdout.write(f"{name}: nothing to change.")
            return
        try:
            services.save_upstream(server, actor=SYSTEM, changed=changed)
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            raise CommandError(f"{name}: {problems}") from exc
        self.stdout.write(f"{name}: {DONE[action]}")

    @staticmethod
    def _apply(server: UpstreamServer, action: str, options: dict[str, Any]) -> list[str]:
        """Set what the action asks on ``server``; the names of the fields that change."""
        wanted: dict[str, Any] = {}
        if action in {"disable", "enable"}:
            wanted["enabled"] = action == "enable"
        else:
            wanted = {field: options.get(field) for field in FIELDS if options.get(field) is not None}
        changed = [field for field, value in wanted.items() if getattr(server, field) != value]
        for field in changed:
            setattr(server, field, wanted[field])
        return changed
