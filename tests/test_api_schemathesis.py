"""The API contract (A1, A4, issue 19): schemathesis runs every operation of the OpenAPI schema
with an admin key and with a channel key of a tenant, with every check it has (CHECKS): each
answer is documented (status code, content type, headers, body), never a 5xx; a request the
schema calls invalid is refused and one it calls valid is accepted, unless a rule no JSON Schema
can state refuses it (NOT_EXPRESSIBLE, per operation); a missing key is a 401 and a made-up or
dropped key never succeeds (ignored_auth sends both); an undocumented method is a 405 with `Allow`.

The schema is the one `/api/v1/schema/` serves, built by the same generator when this module is
imported (schemathesis' fixture-loaded schemas fail under pytest 9: `'Function' object has no
attribute '_nodeid'`). Requests go to the WSGI app in this process, on the test's connection:
what an operation writes is rolled back with the test. Negative examples may drop the
`Authorization` header or break a field on purpose: their 401 and 400 must be documented too.
A few examples per operation (derandomized, no shrinking) keep the run at a couple of minutes;
the earlier long run (39,500 requests) is what found no 5xx, this one keeps the contract.

Each example runs in a savepoint rolled back after it, so no example sees what an earlier one
stored (a name already taken is not what the schema promises). NUL characters are not generated:
the API refuses them in every text (PostgreSQL cannot store them: tests/tenants/test_api_bad_input.py),
a rule the schema could only state as a pattern on every string. The stateful checks judge a
response by the requests before it: the per-operation tests have none, so a third test runs
sequences of operations along the links schemathesis infers (Workflow), with both keys.
object_level_authorization needs two identities that own objects (schemathesis' multi-auth
configuration); tenant isolation has its own tests (tests/isolation.py), so it finds nothing here.

The tenant's model, router and search URLs that PATCH /tenant sets point at
a closed loopback port (each is resolved when set, and a made-up host's DNS look-up costs
seconds). The tenant has no server, tool or turn, so the operations that would do external work
(a server's sync, resources and prompts, a tool's probe and invoke, a turn's event stream) answer
404 for the ids schemathesis makes up; a queued sync or turn is sent only on commit, which a
rolled-back test never reaches; the model test answers `model_not_configured` at once, as the
tenant has no model endpoint. `ASIXTO_SCHEMATHESIS_EXAMPLES` raises the examples per operation.
One more test asks every operation, once, for a type no operation answers with (`Accept`): its 406
must be documented too."""

import os
from urllib.parse import urlsplit

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, settings
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS as REGISTERED_CHECKS
from schemathesis.checks import load_all_checks
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import positive_data_acceptance

# Every check schemathesis has (4.32: not_a_server_error, status_code_conformance,
# content_type_conformance, response_headers_conformance, response_schema_conformance,
# negative_data_rejection, positive_data_acceptance, missing_required_header, unsupported_method,
# allow_header_conformance, use_after_free, ensure_resource_availability, ignored_auth,
# object_level_authorization), a newer version's new ones included.
load_all_checks()
CHECKS = [check for check in REGISTERED_CHECKS.get_all() if not isinstance(check, type)]
EXAMPLES = int(os.environ.get("ASIXTO_SCHEMATHESIS_EXAMPLES", "8"))
WORKFLOWS = 4 * EXAMPLES

# Operations that refuse some requests the schema calls valid, by a rule a JSON Schema cannot
# state; positive_data_acceptance ("a schema-valid request is accepted") cannot hold for them.
# Their refusals are a documented 400, which status_code_conformance still checks.
NOT_EXPRESSIBLE = {
    "POST /api/v1/api-keys": "`expires_at` must be in the future: a rule on the clock",
    "GET /api/v1/usage": "`since` before `until` and at most 400 days apart: a rule across two parameters",
    "GET /api/v1/tools/{id}/stats": "the same period rule",
    "POST /api/v1/servers": "the `url`'s host must resolve, and a private one needs the operator's approval",
    "PATCH /api/v1/servers/{id}": "the same `url` rule",
    "POST /api/v1/webhooks": "the `url` must name a real public host (at most 253 characters, 63 a label)",
    "PATCH /api/v1/webhooks/{id}": "the same `url` rule",
    "POST /api/v1/skills": "`tools` must name tools of the tenant's catalog, and this tenant has none",
    "PATCH /api/v1/skills/{id}": "the same `tools` rule",
    "PATCH /api/v1/tenant": "`turn_budget` at least `result_budget`: a rule across two fields",
    "POST /api/v1/users": "an `email` (for the invitation) or a `password`: a rule across two fields",
    "POST /api/v1/users/{id}/password-link": "the person must have an e-mail address and be active: their state",
}


@pytest.fixture
def wsgi_app():
    """The project's WSGI app, kept on the test's connection: like Django's test client, it does
    not close the connection (and with it the test's transaction) at the end of each request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def generated_schema():
    """The schema /api/v1/schema/ serves, built the same way (no request, no database)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator(urlconf="asixto.urls_api_schema").get_schema(request=None, public=True)


schema = schemathesis.openapi.from_dict(generated_schema())
# ignored_auth sends its own requests (without the key, with a made-up one): to this app, in process.
schema.app = get_wsgi_application()
schema.config.generation.update(allow_x00=False)
examples = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


# The tenant's endpoint URLs are resolved and checked when set (tenants/api/serializers.py): a made-up
# host's DNS look-up can take seconds, so they point at a closed loopback port instead.
UNREACHABLE_URL = "http://127.0.0.1:9/v1"
URL_FIELDS = frozenset({"model_base_url", "router_base_url", "search_url"})


def call_and_validate(case, *, app, key):
    point_urls_at_loopback(case)
    with transaction.atomic():
        case.call_and_validate(app=app, headers=headers_for(case, key), checks=CHECKS,
                               excluded_checks=excluded_checks(case))
        transaction.set_rollback(True)


def point_urls_at_loopback(case):
    if isinstance(case.body, dict):
        for name in URL_FIELDS & case.body.keys():
            if is_url(case.body[name]):  # not a broken one: that must stay broken
                case.body[name] = UNREACHABLE_URL


def headers_for(case, key):
    # A case whose headers are broken on purpose (the key left out, or made up) goes as generated:
    # the key put back would make it a valid request the checks still count as an invalid one.
    if case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER):
        return {}
    return {"Authorization": f"Bearer {key}"}


def excluded_checks(case):
    return [positive_data_acceptance] if case.operation.label in NOT_EXPRESSIBLE else []


def is_url(value):
    if not isinstance(value, str) or len(value) > 500:
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


@schema.parametrize()
@examples
def test_every_operation_answers_what_it_documents_to_an_admin_key(case, alpha, wsgi_app):
    """A1, A4, T3: with an admin key, every status, content type and body an operation answers is
    in the schema (the operator operations' 403 too), and no answer is a 5xx."""
    call_and_validate(case, app=wsgi_app, key=alpha.admin_key)


@schema.parametrize()
@examples
def test_every_operation_answers_what_it_documents_to_a_channel_key(case, alpha, wsgi_app):
    """A1, A4, T3: with a channel key, the same (the admin operations answer a documented 403)."""
    call_and_validate(case, app=wsgi_app, key=alpha.channel_key)


class Workflow(schema.as_state_machine()):
    """Sequences of calls that follow the links schemathesis infers from the schema (a list's or a
    creation's ids into reads, changes, deletions): what the stateful checks need, as they judge
    a response by the ones before it (use_after_free: a deleted object is then a 404;
    ensure_resource_availability: a created one is then found). Each sequence runs in a savepoint
    rolled back at its end."""

    key = None  # the test's

    def setup(self):
        self.savepoint = transaction.atomic()
        self.savepoint.__enter__()

    def teardown(self):
        transaction.set_rollback(True)
        self.savepoint.__exit__(None, None, None)

    def before_call(self, case):
        point_urls_at_loopback(case)

    def get_call_kwargs(self, case):
        return {"headers": headers_for(case, self.key)}

    def validate_response(self, response, case, additional_checks=None, **kwargs):
        case.validate_response(response, checks=CHECKS, excluded_checks=excluded_checks(case),
                               headers=kwargs.get("headers"), transport_kwargs=kwargs or None, recorder=self.recorder)


@pytest.mark.parametrize("scope", ["admin", "channel"])
def test_sequences_of_operations_answer_what_they_document(alpha, wsgi_app, scope):
    """A1, A4, issue 19: following the schema's links from one operation to the next, every answer
    passes every check, the stateful ones included (a deleted object is gone, a created one is there)."""
    Workflow.key = alpha.admin_key if scope == "admin" else alpha.channel_key
    Workflow.run(settings=settings(max_examples=WORKFLOWS, stateful_step_count=10, derandomize=True, database=None,
                                   deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)))


# An Accept header the API cannot serve: DRF's content negotiation answers 406 before anything else
# (authentication included), in the Error body as JSON. Valid requests only: a made-up id that is not
# a UUID matches no URL pattern, a 404 before any view runs.
UNSERVED_ACCEPT = "application/xml"
valid_requests = schemathesis.openapi.from_dict(generated_schema())
valid_requests.app = schema.app
valid_requests.config.generation.update(modes=[GenerationMode.POSITIVE])


@valid_requests.parametrize()
@settings(max_examples=1, derandomize=True, database=None, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_every_operation_documents_its_answer_to_an_accept_header_it_cannot_serve(case, alpha, wsgi_app):
    """A1, A4, issue 19 ("every status code the API returns"): asked for a type it does not answer
    with, every operation answers a documented 406 (`not_acceptable`) with the Error body as JSON.
    Every check but positive_data_acceptance: the request is valid, the refusal is the point."""
    response = case.call_and_validate(app=wsgi_app, checks=CHECKS, excluded_checks=[positive_data_acceptance],
                                      headers={"Authorization": f"Bearer {alpha.admin_key}", "Accept": UNSERVED_ACCEPT})
    assert response.status_code == 406, (case.method, case.path, response.status_code)
    assert response.json()["error"]["code"] == "not_acceptable"
