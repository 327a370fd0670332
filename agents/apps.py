from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents import escalations
        from governance import reviews

        reviews.register(escalations.REVIEW_KIND, escalations.on_review_decided)
