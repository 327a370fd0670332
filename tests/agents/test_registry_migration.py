"""Migrations 0015 and 0016 on a fleet of the release before the registries: the registries start
with exactly the values the seeds' enums accepted, so every value already stored is registered and
active, and agents stored then are read and filtered as before."""

from __future__ import annotations

import pytest

from tests.support.migrations import back_at, migrate

BEFORE = [("agents", "0014_kpi_sample_reported")]
AFTER = [("agents", "0016_seed_registries")]
ENUMS = {
    "AgentRole": {"architect", "analyzer", "executor", "validator", "orchestrator"},
    "Domain": {"core", "infra", "data", "seo", "rag", "cart", "aicos"},
    "Intent": {"seo_audit", "content_generate", "rag_reindex", "kg_diagnose", "routes_sync", "sitemap_build"},
    "EntityType": {"gamme", "vehicle", "article", "page", "all"},
}


@pytest.mark.django_db(transaction=True)
def test_the_registries_start_with_the_enums_values_and_stored_agents_keep_theirs():
    with back_at(BEFORE) as old:
        old.get_model("agents", "Agent").objects.create(agent_id="agent.old.one", role="orchestrator", domain="aicos")

        new = migrate(AFTER)

        found = {name: dict(new.get_model("agents", name).objects.values_list("value", "retired_at")) for name in ENUMS}
        agent = new.get_model("agents", "Agent").objects.get(agent_id="agent.old.one")

    assert {name: set(values) for name, values in found.items()} == ENUMS
    assert all(retired is None for values in found.values() for retired in values.values())
    assert (agent.role, agent.domain) == ("orchestrator", "aicos")
    assert new.get_model("agents", "Domain").objects.get(value="seo").label == "SEO"
