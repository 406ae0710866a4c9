"""The URLconf the OpenAPI schema is generated from: the API under its real prefix."""

from django.urls import include, path

urlpatterns = [path("api/v1/", include("asixto.urls_api"))]
