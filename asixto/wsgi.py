"""The WSGI application (gunicorn in ./run and production, see bin/gunicorn.conf.py)."""

import os

from django.core.wsgi import get_wsgi_application

from asixto.process import make_non_dumpable

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")
make_non_dumpable()
application = get_wsgi_application()
