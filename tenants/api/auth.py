"""DRF authentication and permissions over the API key that the tenant middleware resolved."""

from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from tenants.models import ApiKey


class ApiPrincipal:
    """What `request.user` is for an API call: the key, not a dashboard user."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, key):
        self.key = key
        self.pk = None

    def __str__(self):
        return f"api-key:{self.key.prefix}"


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        key = getattr(request._request, "api_key", None)
        if key is None:
            return None
        return ApiPrincipal(key), key

    def authenticate_header(self, request):
        # Makes DRF answer 401 (not 403) when no key was sent.
        return 'Bearer realm="api"'


class _ScopePermission(BasePermission):
    scopes: tuple[str, ...] = ()

    def has_permission(self, request, view):
        key = request.auth
        return isinstance(key, ApiKey) and key.scope in self.scopes


class IsAdminKey(_ScopePermission):
    scopes = (ApiKey.Scope.ADMIN,)


class IsChannelKey(_ScopePermission):
    """Conversations and turns: channel keys, and admin keys (which can do everything)."""

    scopes = (ApiKey.Scope.CHANNEL, ApiKey.Scope.ADMIN)


class IsOperatorKey(_ScopePermission):
    scopes = (ApiKey.Scope.OPERATOR,)
