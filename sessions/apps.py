from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions"
    # `sessions` is taken by django.contrib.sessions.
    label = "ai_sessions"
    verbose_name = "AI sessions"
