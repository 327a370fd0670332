"""Migration 0004 on rows written before provider profiles existed: the demo's scripted automation
keeps being hosted on a profile of its own; an agent-configured one (URL and key variable chosen
through the API) is not carried over and is no longer hosted."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.support.migrations import back_at, migrate

BEFORE = [("ai_sessions", "0003_default_prompt_chunks_and_tick")]
AFTER = [("ai_sessions", "0004_provider_profiles")]


@pytest.mark.django_db(transaction=True)
def test_old_provider_configs_become_profiles_only_when_the_server_made_them():
    with back_at(BEFORE) as old:
        agent = old.get_model("agents", "Agent").objects.create(agent_id="agent.old", name="old", role="executor")
        session_model, automation_model = (
            old.get_model("ai_sessions", "AISession"),
            old.get_model("ai_sessions", "Automation"),
        )

        def automation(name: str, created_by: str, provider: str, config: dict) -> int:
            seed = session_model.objects.create(agent=agent, name=name, type="SEED", created_at=timezone.now())
            row = automation_model.objects.create(
                agent=agent,
                name=name,
                seed_session=seed,
                trigger="MANUAL",
                created_by=created_by,
                provider=provider,
                provider_config=config,
            )
            return row.pk

        demo = automation("demo", "system", "scripted", {"responses": ["{}"], "simulate_actions": True})
        stolen = automation(
            "steal",
            "agent:agent.old",
            "openai",
            {
                "api_key_env": "DATABASE_URL",
                "base_url": "http://127.0.0.1:9",
                "model": "m",
                "api_key": "sk-literal-in-a-row",
            },
        )
        faked = automation("fake", "agent:agent.old", "scripted", {"responses": ["{}"], "simulate_actions": True})
        plain = automation("plain", "agent:agent.old", "", {})

        new = migrate(AFTER)

    rows = {row.pk: row for row in new.get_model("ai_sessions", "Automation").objects.select_related("profile")}
    assert rows[demo].profile.provider == "scripted"
    assert rows[demo].profile.options == {"responses": ["{}"], "simulate_actions": True}
    assert (rows[stolen].profile, rows[faked].profile, rows[plain].profile) == (None, None, None)
    assert new.get_model("ai_sessions", "ProviderProfile").objects.count() == 1
    unhosted = new.get_model("governance", "AuditEvent").objects.filter(action="automation.unhosted")
    assert sorted(int(event.target_id) for event in unhosted) == sorted([stolen, faked])
    assert "sk-literal-in-a-row" not in str([event.data for event in unhosted])
