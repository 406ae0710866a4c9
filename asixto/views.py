"""The platform domain's landing page, and error pages: JSON under /api/ (the API's error body,
A4), HTML elsewhere."""

import logging
import sys

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, HttpResponseServerError, JsonResponse
from django.http.request import split_domain_port
from django.shortcuts import render
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext as _

from asixto.errors import error_body, json_not_found, json_server_error

log = logging.getLogger(__name__)


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return json_not_found(request)
    return render(request, "404.html", status=404)


UNAVAILABLE_RETRY_SECONDS = 5


def _unavailable(request):
    """503 with Retry-After when what failed is the database itself (down, restarting, out of
    connections): a client should come back, and nothing it sent was stored (issue 19)."""
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body("unavailable", _(
            "The service is briefly unavailable; nothing was stored. Try again in a few seconds.")), status=503)
    else:
        title = escape(_("Back in a moment"))
        text = escape(_("The service is briefly unavailable; nothing was stored. Try again in a few seconds."))
        response = HttpResponse(f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>"
                                f"<body><h1>{title}</h1><p>{text}</p></body></html>", status=503)
    response["Retry-After"] = str(UNAVAILABLE_RETRY_SECONDS)
    return response


def server_error(request):
    """The layout in the reader's language; if even that fails (the database is what broke, and
    the layout reads the signed-in user), a bare page with the same words. When the error is the
    database being unreachable, a 503 that says to come back (`_unavailable`)."""
    if isinstance(sys.exc_info()[1], (OperationalError, InterfaceError)):  # handler500 runs inside the except
        return _unavailable(request)
    if request.path.startswith("/api/"):
        return json_server_error(request)
    try:
        return render(request, "500.html", status=500)
    except Exception:
        log.exception("The 500 page could not be rendered with the layout")
        title = escape(_("Something went wrong"))
        text = escape(_("An internal error stopped this page. Nothing you sent was lost because of it; try again in a moment, and if it keeps happening, tell the platform operator."))
        language = escape(translation.get_language() or settings.LANGUAGE_CODE)
        return HttpResponseServerError(
            f'<!doctype html><html lang="{language}"><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body><h1>{title}</h1><p>{text}</p></body></html>"
        )


def landing(request):
    """What the platform's own domain shows: where the docs, the admin and the dashboards are,
    with this server's real host and port (a dashboard is `<slug>.<base domain>[:port]`)."""
    _domain, port = split_domain_port(request.get_host())  # the port the browser used
    suffix = f":{port}" if port else ""
    return render(request, "public/landing.html", {
        "dashboard_example": f"{request.scheme}://demo.{settings.ASIXTO_BASE_DOMAIN}{suffix}/",
        "base_url": request.build_absolute_uri("/").rstrip("/"),
    })
