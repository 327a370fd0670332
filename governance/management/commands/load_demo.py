"""Load the demo fleet: each product app contributes through its own ``demo.load()``."""

from __future__ import annotations

from importlib import import_module

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import transaction

from governance.roles import PRODUCT_APPS


class Command(BaseCommand):
    help = "Create (or refresh) demo accounts, agents and data. Safe to run again."

    def handle(self, *args: object, **options: object) -> None:
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
