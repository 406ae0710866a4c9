"""Dashboard lists, one page at a time (A2): no page renders more than `PAGE_SIZE` rows, however
many a tenant has. Templates include `pagination.html`, whose links keep the list's filters."""

from django.core.paginator import Paginator

PAGE_SIZE = 50


def list_page(request, items, *, per_page: int = PAGE_SIZE):
    """The page of `items` named by `?page=`: a missing, malformed or out-of-range number gives
    the first or the last page, never an error."""
    return Paginator(items, per_page).get_page(request.GET.get("page"))
