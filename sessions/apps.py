from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions"
    # `sessions` is taken by django.contrib.sessions.
    label = "ai_sessions"
    verbose_name = "AI sessions"

    def ready(self) -> None:
        from agents import hooks
        from governance.reviews import kinds
        from sessions import automations, checks, inbox  # noqa: F401  (checks: registers them)

        kinds.register(inbox.VALIDATION_KIND)
        kinds.register(inbox.COMMUNICATION_KIND)
        hooks.PLATFORM_EVENTS.connect(automations.on_platform_event)  # seed 003's EVENT trigger
