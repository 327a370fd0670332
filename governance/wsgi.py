import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "governance.settings")

from governance.kernel import runtime, tracing

runtime.prepare()
# gunicorn imports this module in each worker (no preload): tracing starts after the fork.
tracing.setup("governance-web")
application = get_wsgi_application()
