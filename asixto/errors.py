"""One application error type and one error body for every API failure (A4):
`{"error": {"code": "...", "message": "...", "fields": {...}}}`."""

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApplicationError(Exception):
    """Raised by services for a failure the caller can act on; mapped to a 4xx response."""

    def __init__(self, message, *, code="invalid", fields=None, status_code=400):
        super().__init__(message)
        self.message = message
        self.code = code
        self.fields = fields or {}
        self.status_code = status_code


def _flatten(detail):
    if isinstance(detail, dict):
        return {key: _flatten(value) for key, value in detail.items()}
    if isinstance(detail, list):
        if all(isinstance(item, (str, exceptions.ErrorDetail)) for item in detail):
            return [str(item) for item in detail]
        return [_flatten(item) for item in detail]
    return [str(detail)]


def error_body(code, message, fields=None):
    return {"error": {"code": code, "message": str(message), "fields": fields or {}}}


def _too_large_body():
    return error_body("payload_too_large", _("The request body is larger than %(size)d bytes.") % {"size": settings.DATA_UPLOAD_MAX_MEMORY_SIZE})


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.code, exc.message, exc.fields), status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        return Response(_too_large_body(), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body("invalid", _("The request has invalid fields."), _flatten(detail))
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
        response.data = error_body(code, detail)
    return response


def json_not_found(request, exception=None):
    return JsonResponse(error_body("not_found", _("Not found.")), status=status.HTTP_404_NOT_FOUND)


def json_bad_request(request, exception=None):
    """Django's own 400s (a body over DATA_UPLOAD_MAX_MEMORY_SIZE read outside a DRF view, a
    bad Host) in the API's error body."""
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse(_too_large_body(), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    return JsonResponse(error_body("bad_request", _("Bad request.")), status=status.HTTP_400_BAD_REQUEST)


def bad_request(request, exception=None):
    """handler400: JSON under /api/; elsewhere a page that says what went wrong (a form over
    the upload limit is 413 and says so)."""
    if request.path.startswith("/api/"):
        return json_bad_request(request, exception)
    too_large = isinstance(exception, RequestDataTooBig)
    context = {"too_large": too_large, "limit_kb": settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024}
    return render(request, "400.html", context, status=413 if too_large else 400)


def json_server_error(request):
    return JsonResponse(error_body("server_error", _("Internal error.")), status=500)
