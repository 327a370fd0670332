"""System checks for configuration an operator should fix before production."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Warning, register


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
