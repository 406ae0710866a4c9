"""The API contract (A1, A4, issue 19): schemathesis runs every operation of the OpenAPI schema
with an admin key and with a channel key of a tenant, and each answer must be documented — its
status code, its content type and its body's schema — and never a 5xx.

The schema is the one `/api/v1/schema/` serves, built by the same generator when this module is
imported (schemathesis' fixture-loaded schemas fail under pytest 9: `'Function' object has no
attribute '_nodeid'`). Requests go to the WSGI app in this process, on the test's connection:
what an operation writes is rolled back with the test. Negative examples may drop the
`Authorization` header or break a field on purpose: their 401 and 400 must be documented too.
A few examples per operation (derandomized, no shrinking) keep the run at a couple of minutes;
the earlier long run (39,500 requests) is what found no 5xx, this one keeps the contract.

Nothing is excluded. The tenant's model, router and search URLs that PATCH /tenant sets point at
a closed loopback port (each is resolved when set, and a made-up host's DNS look-up costs
seconds). The tenant has no server, tool or turn, so the operations that would do external work
(a server's sync, resources and prompts, a tool's probe and invoke, a turn's event stream) answer
404 for the ids schemathesis makes up; a queued sync or turn is sent only on commit, which a
rolled-back test never reaches; the model test answers `model_not_configured` at once, as the
tenant has no model endpoint. `ASIXTO_SCHEMATHESIS_EXAMPLES` raises the examples per operation.
One more test asks every operation, once, for a type no operation answers with (`Accept`): its 406
must be documented too."""

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = int(os.environ.get("ASIXTO_SCHEMATHESIS_EXAMPLES", "8"))


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
examples = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


# The tenant's endpoint URLs are resolved and checked when set (tenants/api/serializers.py): a made-up
# host's DNS look-up can take seconds, so they point at a closed loopback port instead.
UNREACHABLE_URL = "http://127.0.0.1:9/v1"
URL_FIELDS = frozenset({"model_base_url", "router_base_url", "search_url"})


def call_and_validate(case, *, app, key):
    if isinstance(case.body, dict):
        for name in URL_FIELDS & case.body.keys():
            if isinstance(case.body[name], str):
                case.body[name] = UNREACHABLE_URL
    case.call_and_validate(app=app, headers={"Authorization": f"Bearer {key}"}, checks=CHECKS)


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


# An Accept header the API cannot serve: DRF's content negotiation answers 406 before anything else
# (authentication included), in the Error body as JSON. Valid requests only: a made-up id that is not
# a UUID matches no URL pattern, a 404 before any view runs.
UNSERVED_ACCEPT = "application/xml"
valid_requests = schemathesis.openapi.from_dict(generated_schema())
valid_requests.config.generation.update(modes=[GenerationMode.POSITIVE])


@valid_requests.parametrize()
@settings(max_examples=1, derandomize=True, database=None, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_every_operation_documents_its_answer_to_an_accept_header_it_cannot_serve(case, alpha, wsgi_app):
    """A1, A4, issue 19 ("every status code the API returns"): asked for a type it does not answer
    with, every operation answers a documented 406 (`not_acceptable`) with the Error body as JSON."""
    response = case.call_and_validate(app=wsgi_app, checks=CHECKS,
                                      headers={"Authorization": f"Bearer {alpha.admin_key}", "Accept": UNSERVED_ACCEPT})
    assert response.status_code == 406, (case.method, case.path, response.status_code)
    assert response.json()["error"]["code"] == "not_acceptable"
