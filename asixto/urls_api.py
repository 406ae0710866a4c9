"""Every REST endpoint, under /api/v1/ (A1). Included by both the tenant and the public URLconf,
because the API resolves its tenant from the key, not from the host."""

from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

app_name = "api"

urlpatterns = [
    path("", include("tenants.api.urls")),
    path("", include("accounts.api.urls")),
    path("", include("tools.api.urls")),
    path("", include("runtime.api.urls")),
    path("schema/", SpectacularAPIView.as_view(urlconf="asixto.urls_api_schema"), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
]
