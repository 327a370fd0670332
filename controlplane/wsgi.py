import os
import threading

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

from governance.kernel import runtime, tracing
from memory import embeddings

runtime.prepare()
# gunicorn imports this module in each worker (no preload): tracing starts after the fork.
tracing.setup("governance-web")
application = get_wsgi_application()
# A web worker answers the agents' injection blocks, which embed their query: the model is loaded
# as the worker starts, not by the first block. In the background: gunicorn kills a worker whose
# start outlasts its 30 s timeout (eight workers loading the model at once on 2 cores once took 26 s).
threading.Thread(target=embeddings.preload, name="embeddings-preload", daemon=True).start()
