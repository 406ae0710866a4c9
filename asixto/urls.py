"""URLs on a tenant's domain: the dashboard, and the API."""

from django.urls import include, path

from accounts import views as people_pages
from runtime import views as runtime_pages
from tenants import views as tenant_pages
from tools import views as tool_pages

handler400 = "asixto.errors.bad_request"
handler404 = "asixto.views.not_found"
handler500 = "asixto.views.server_error"

urlpatterns = [
    path("api/v1/", include("asixto.urls_api")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include((
        tenant_pages.urlpatterns + people_pages.urlpatterns + tool_pages.urlpatterns
        + runtime_pages.urlpatterns, "dashboard",
    ))),
]
