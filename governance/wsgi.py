import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "governance.settings")

from governance.kernel import runtime

runtime.prepare()
application = get_wsgi_application()
