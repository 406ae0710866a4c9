"""The platform domain's landing page, and error pages: JSON under /api/ (the API's error body,
A4), HTML elsewhere."""

from django.conf import settings
from django.http.request import split_domain_port
from django.shortcuts import render

from asixto.errors import json_not_found, json_server_error


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return json_not_found(request)
    return render(request, "404.html", status=404)


def server_error(request):
    if request.path.startswith("/api/"):
        return json_server_error(request)
    return render(request, "500.html", status=500)


def landing(request):
    """What the platform's own domain shows: where the docs, the admin and the dashboards are,
    with this server's real host and port (a dashboard is `<slug>.<base domain>[:port]`)."""
    _domain, port = split_domain_port(request.get_host())  # the port the browser used
    suffix = f":{port}" if port else ""
    return render(request, "public/landing.html", {
        "dashboard_example": f"{request.scheme}://demo.{settings.ASIXTO_BASE_DOMAIN}{suffix}/",
        "base_url": request.build_absolute_uri("/").rstrip("/"),
    })
