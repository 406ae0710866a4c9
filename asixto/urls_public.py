"""URLs on the platform's own domain (public schema): operators' admin, the API, a landing page."""

from django.contrib import admin
from django.urls import include, path

from asixto.metrics_view import metrics
from asixto.views import landing

handler400 = "asixto.errors.bad_request"
handler404 = "asixto.views.not_found"
handler500 = "asixto.views.server_error"

urlpatterns = [
    path("api/v1/", include("asixto.urls_api")),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("metrics", metrics, name="metrics"),
    path("", landing, name="landing"),
]
