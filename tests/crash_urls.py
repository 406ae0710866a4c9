"""The tenant URLconf plus one page that fails, to see the 500 page as a reader would (A3)."""

from django.urls import path

from asixto.urls import handler400, handler404, handler500, urlpatterns as tenant_urlpatterns  # noqa: F401


def crash(request):
    raise RuntimeError("a page that fails, on purpose")


urlpatterns = [path("crash/", crash), *tenant_urlpatterns]
