from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents import escalations, tools
        from governance.reviews import services as reviews

        reviews.register(escalations.REVIEW_KIND, escalations.on_review_decided)
        reviews.register(tools.REVIEW_KIND, tools.on_review_decided)
