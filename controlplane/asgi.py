import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

from governance.kernel import runtime, tracing

runtime.prepare()
tracing.setup("governance-web")
application = get_asgi_application()
