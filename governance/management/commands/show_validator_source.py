"""`manage.py show_validator_source NAME [--version N]`: the Python that validates a contract's outputs."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.contracts import services as contracts
from governance.kernel.exceptions import NotFound


class Command(BaseCommand):
    help = (
        "Print the validator source generated for a contract version (the current one by default): "
        "the code the service runs on every output of that version. Reads only."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # "--version" names the contract's version here, not Django's: the later definition wins.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="contract name, as in the catalog")
        parser.add_argument("--version", type=int, default=None, help="version number (default: the current one)")

    def handle(self, *args: object, name: str, version: int | None, **options: object) -> None:
        try:
            contract = contracts.version(name, version)
        except NotFound as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"# contract {contract.name!r}, version {contract.version}")
        self.stdout.write(contracts.validator_source(contract), ending="")
