"""System checks for configuration an operator should fix before production."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register
from django.db import DatabaseError, connection

from governance.kernel import vector_extension


@register("security", deploy=True)
def secret_key_configured(app_configs: object, **kwargs: object) -> list[Warning]:
    if settings.SECRET_KEY_GENERATED:
        return [
            Warning(
                "SECRET_KEY is generated under var/ on this machine.",
                hint="Set SECRET_KEY (or SECRET_KEY_FILE) so every host of the deployment shares one key.",
                id="governance.W001",
            )
        ]
    return []


@register("celery", deploy=True)
def broker_is_shared(app_configs: object, **kwargs: object) -> list[Warning]:
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return [
            Warning(
                "Celery uses the filesystem broker under var/celery/: workers on other hosts cannot see it.",
                hint="Set CELERY_BROKER_URL to Redis or RabbitMQ to run workers on several hosts.",
                id="governance.W002",
            )
        ]
    return []


@register("security")
def web_security_values_usable(app_configs: object, **kwargs: object) -> list[Warning]:
    """Zero or negative limits would quietly switch a defence off (axes never locks, sessions die at once)."""
    problems = []
    for name in ("LOGIN_FAILURE_LIMIT", "LOGIN_LOCKOUT_MINUTES", "SESSION_IDLE_TIMEOUT_MINUTES"):
        if getattr(settings, name) < 1:
            problems.append(
                Warning(
                    f"{name} is {getattr(settings, name)}: it must be at least 1.",
                    hint=f"Set {name} to a positive whole number (README, Configuration).",
                    id="governance.W003",
                )
            )
    return problems


@register("security", deploy=True)
def ssl_redirect_has_a_proxy(app_configs: object, **kwargs: object) -> list[Warning]:
    """`make run` serves plain http: redirecting to https only works when a TLS proxy sits in front."""
    if settings.SECURE_SSL_REDIRECT and not settings.BEHIND_PROXY:
        return [
            Warning(
                "SECURE_SSL_REDIRECT is on but BEHIND_PROXY is off: requests through a TLS proxy look like "
                "plain http and are redirected forever.",
                hint="Put a TLS-terminating proxy that sets X-Forwarded-Proto in front, and set BEHIND_PROXY=true.",
                id="governance.W004",
            )
        ]
    return []


@register("celery")
def visibility_timeout_outlasts_tasks(app_configs: object, **kwargs: object) -> list[Warning]:
    """A visibility timeout shorter than the longest task makes Redis hand a running task to a second worker."""
    if settings.CELERY_VISIBILITY_TIMEOUT <= settings.CELERY_TASK_TIME_LIMIT:
        return [
            Warning(
                f"CELERY_VISIBILITY_TIMEOUT ({settings.CELERY_VISIBILITY_TIMEOUT} s) does not outlast "
                f"CELERY_TASK_TIME_LIMIT ({settings.CELERY_TASK_TIME_LIMIT} s): long tasks would run twice.",
                hint="Set CELERY_VISIBILITY_TIMEOUT above the task time limit (README, Configuration).",
                id="governance.W005",
            )
        ]
    return []


def vector_extension_warnings(installed: str | None, available: str | None) -> list[Warning]:
    """governance.W006 for the pgvector versions read from the database (vector_extension.VERSIONS_SQL)."""
    found = vector_extension.problem(installed, available)
    if found is None:
        return []
    what, fix = found
    return [Warning(what, hint=f"{fix} (README, Production start)", id="governance.W006")]


@register("database", deploy=True)
def vector_extension_recent_enough(app_configs: object, **kwargs: object) -> list[Warning]:
    """Filtered vector searches need pgvector's iterative index scans (0.8.0). Asks the database, so
    only `check --deploy` runs it: every other command's checks stay offline."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(vector_extension.VERSIONS_SQL)
            installed, available = cursor.fetchone()
    except DatabaseError as exc:
        return [
            Warning(
                f"pgvector's version could not be read from the database: {str(exc).strip()}",
                hint=f"Check DATABASE_URL and that the server answers; pgvector {vector_extension.MINIMUM} "
                "or later is needed (README, Production start).",
                id="governance.W006",
            )
        ]
    return vector_extension_warnings(installed, available)


# Settings with a fixed set of values: a typo must stop the start, not fall back silently.
CHOICES: dict[str, tuple[str, ...]] = {
    "JOB_LOCK_BACKOFF": ("linear", "exponential"),
    "JOB_KEY_STRATEGY": ("hash", "composite", "custom"),
    "LEARNINGS_PROMOTION_MODE": ("review", "auto"),
    "EMBEDDING_BACKEND": ("local", "ollama", "openai", "hashing"),
}


@register()
def enumerated_settings_are_known(app_configs: object, **kwargs: object) -> list[Error]:
    return [
        Error(
            f"{name}={getattr(settings, name)!r} is not one of: {', '.join(choices)}.",
            hint=f"Set {name} to one of the values the README lists, or unset it for the default.",
            id="governance.E001",
        )
        for name, choices in CHOICES.items()
        if getattr(settings, name) not in choices
    ]
