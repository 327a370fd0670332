"""The project package: settings, urls, the root API, WSGI/ASGI, Celery, the serve and demo commands.

It sits on top of every app and is the only package that imports them all; the governance app
(``governance/``) is the lowest layer, below agents, sessions and memory.
"""

from controlplane.celery import app as celery_app

__all__ = ["celery_app"]
