"""Error pages: JSON under /api/ (the API's error body, A4), HTML elsewhere."""

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
