"""The admin index names every model in good English (issue 17.3): Django adds an "s" to the
verbose name unless the model says otherwise, which gave "Subject memorys"."""

from __future__ import annotations

import re

import pytest
from django.apps import apps


@pytest.mark.django_db
def test_the_admin_index_spells_every_plural(admin_client):
    page = admin_client.get("/admin/").content.decode()

    for name in ("Subject memories", "Transition probabilities"):
        assert f">{name}<" in page
    assert re.findall(r">[A-Z][\w ]*(?:[^aeiou]ys|[sxz]s|[cs]hs)<", page) == []


def test_every_model_of_the_product_has_a_proper_plural():
    """Models outside the admin index too (a rule's compliance watches are an inline)."""
    products = {"governance", "agents", "sessions", "memory", "gateway"}
    plurals = [
        model._meta.verbose_name_plural for model in apps.get_models() if model._meta.app_config.name in products
    ]

    assert "compliance watches" in plurals
    assert [name for name in plurals if re.search(r"(?:[^aeiou]ys|[sxz]s|[cs]hs)$", str(name))] == []
