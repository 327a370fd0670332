from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions"
    # `sessions` is taken by django.contrib.sessions.
    label = "ai_sessions"
    verbose_name = "AI sessions"

    def ready(self) -> None:
        from agents import triggers
        from governance.reviews import services as reviews
        from sessions import automations, inbox, processor

        # The scheduler's tick expires these (seconds, not beat's minute): reviews.expire_due leaves them.
        reviews.register(processor.REVIEW_KINDS["validation"], inbox.on_validation_decided, expires_itself=True)
        reviews.register(processor.REVIEW_KINDS["communication"], inbox.on_communication_decided, expires_itself=True)
        triggers.listen(automations.on_platform_event)  # seed 003's EVENT trigger
