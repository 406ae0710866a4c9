"""Who may see a dashboard page: signed-in users of the tenant whose domain it is (T1), and for
pages that change anything, its admins only (T4)."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404


def tenant_page(view):
    """Dashboard pages exist only on a tenant's domain, for its signed-in users."""

    @wraps(view)
    @login_required
    def wrapper(request, *args, **kwargs):
        if request.tenant.schema_name == "public":
            raise Http404
        return view(request, *args, **kwargs)

    return wrapper


def admin_page(view):
    """Pages that change the tenant: tenant admins only; support staff get 403 (T4)."""

    @wraps(view)
    @tenant_page
    def wrapper(request, *args, **kwargs):
        if not request.user.is_tenant_admin:
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper
