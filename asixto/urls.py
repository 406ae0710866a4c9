"""URLs on a tenant's domain: the dashboard, and the API."""

from django.urls import include, path

from tenants import views as dashboard

handler404 = "asixto.views.not_found"
handler500 = "asixto.views.server_error"

urlpatterns = [
    path("api/v1/", include("asixto.urls_api")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include((dashboard.urlpatterns, "dashboard"))),
]
