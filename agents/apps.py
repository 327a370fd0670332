from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents import escalations, named_schemas, registries, skills, tools
        from governance.reviews import services as reviews

        # An escalation past its deadline is escalated again once before it expires (escalations.py).
        reviews.register(escalations.REVIEW_KIND, escalations.on_review_decided, expires_itself=True)
        reviews.register(tools.REVIEW_KIND, tools.on_review_decided)
        post_migrate.connect(skills.seed_after_migrate, sender=self, dispatch_uid="agents.skills.seed")
        # The seeds' registry values, on a database flushed between tests as on a fresh install.
        post_migrate.connect(registries.seed_after_migrate, sender=self, dispatch_uid="agents.registries.seed")
        post_migrate.connect(named_schemas.seed_after_migrate, sender=self, dispatch_uid="agents.named_schemas.seed")
