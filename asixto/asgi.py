"""The ASGI application, for servers that prefer it (uvicorn); ./run serves WSGI."""

import os

from django.core.asgi import get_asgi_application

from asixto import tracing
from asixto.process import make_non_dumpable

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")
make_non_dumpable()
tracing.setup(service="asixto-web")  # see asixto/wsgi.py
application = get_asgi_application()
