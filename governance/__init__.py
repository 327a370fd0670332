"""Project package and the governance app (contracts, review inbox, API keys, task runs)."""

from governance.celery import app as celery_app

__all__ = ["celery_app"]
