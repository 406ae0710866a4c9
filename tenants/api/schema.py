"""How the OpenAPI schema describes the API key (A1): an HTTP Bearer scheme, so the docs at
/api/v1/docs/ have an Authorize button and "Try it out" sends the key. drf-spectacular finds
this extension by the authentication class it names; tenants.apps imports it at start-up."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "asx_<prefix>_<secret>",
            "description": (
                "An API key of the tenant (`channel`: conversations and turns; `admin`: everything of the "
                "tenant; `operator`: the operator endpoints). The key alone selects the tenant."
            ),
        }
