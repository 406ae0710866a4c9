"""The WSGI application (gunicorn in ./run and production, see bin/gunicorn.conf.py)."""

import os

from django.core.wsgi import get_wsgi_application

from asixto import tracing
from asixto.process import make_non_dumpable

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")
make_non_dumpable()
# Each gunicorn worker imports this after the fork: traces (if configured) start here, before the
# handler loads its middleware, which the Django instrumentation adds to.
tracing.setup(service="asixto-web")
application = get_wsgi_application()
