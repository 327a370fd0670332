"""Load the demo fleet: each product app contributes through its own ``demo.load()``."""

from __future__ import annotations

from importlib import import_module

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import transaction

from agents.demo import DEMO_AGENTS
from controlplane import demo_credentials
from governance.kernel.roles import PRODUCT_APPS


class Command(BaseCommand):
    help = "Load the demo fleet, its data, accounts and keys into an empty database; later runs change nothing."

    def handle(self, *args: object, **options: object) -> None:
        # Decided before the loaders run, since the agents' loader creates the demo agents. Once
        # anything is there, the database is the operators': a demo loaded again would fight their
        # changes (a manifest they upgraded, a contract they edited), so it is loaded only once.
        if not demo_credentials.is_empty_install():
            self.stdout.write(
                "Demo data: not loaded (the database is not empty; the demo loads only into an empty one).\n"
            )
            demo_credentials.remind(self.stdout)
            return
        # The governance demo audits the demo agents' LLM outputs: it runs after the apps that make them.
        for label in sorted(PRODUCT_APPS, key=lambda label: label == "governance"):
            module_name = f"{apps.get_app_config(label).name}.demo"
            try:
                demo = import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name != module_name:
                    raise
                continue
            with transaction.atomic():
                demo.load(self.stdout)
        demo_credentials.create(DEMO_AGENTS, self.stdout)
