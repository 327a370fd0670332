import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "governance.settings")

from governance.kernel import runtime

runtime.prepare()
application = get_asgi_application()
