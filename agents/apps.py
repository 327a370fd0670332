from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents import (
            approvals,
            escalations,
            hooks,
            kpi_alerts,
            named_schemas,
            quotas,
            registries,
            skills,
            tools,
            triggers,
        )
        from governance.reviews import kinds

        for kind in (escalations.REVIEW, tools.REVIEW, approvals.REVIEW, kpi_alerts.REVIEW):
            kinds.register(kind)
        kinds.PENDING_ASKS.provide(quotas.admit_ask)
        hooks.JOB_FINISHED.connect(triggers.job_finished)
        post_migrate.connect(skills.seed_after_migrate, sender=self, dispatch_uid="agents.skills.seed")
        # The seeds' registry values, on a database flushed between tests as on a fresh install.
        post_migrate.connect(registries.seed_after_migrate, sender=self, dispatch_uid="agents.registries.seed")
        post_migrate.connect(named_schemas.seed_after_migrate, sender=self, dispatch_uid="agents.named_schemas.seed")
