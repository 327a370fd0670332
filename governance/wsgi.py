import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "governance.settings")

from governance.kernel import runtime, tracing
from memory import embeddings

runtime.prepare()
# gunicorn imports this module in each worker (no preload): tracing starts after the fork.
tracing.setup("governance-web")
application = get_wsgi_application()
# A web worker answers the agents' injection blocks, which embed their query: the model is loaded
# before the worker takes its first request, not during it.
embeddings.preload()
