"""What the instrumentations record leaves the process cleaned (asixto/trace_scrub.py, `Scrubbed`):
no headers, no query strings or user info, a server's route instead of its path, SQL without its
string literals, events and statuses without messages. Plain data, no database."""

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from asixto.trace_scrub import Scrubbed, scrubbed_attributes


def test_client_urls_lose_their_query_and_user_info_and_headers_are_dropped():
    """Issue 21 (traces), T7: a model or server URL with a key in its query or its user info
    leaves with neither; captured headers never leave."""
    attributes = {
        "http.url": "https://user:pa55@models.example.com:8443/v1/chat/completions?api_key=sk-live-123#x",
        "url.full": "https://models.example.com/v1/chat/completions?key=sk-live-123",
        "url.query": "key=sk-live-123",
        "http.request.header.authorization": ("Bearer sk-live-123",),
        "http.response.header.set_cookie": ("session=abc",),
        "http.method": "POST",
    }
    assert scrubbed_attributes(attributes, server=False) == {
        "http.url": "https://models.example.com:8443/v1/chat/completions",
        "url.full": "https://models.example.com/v1/chat/completions",
        "http.method": "POST",
    }


def test_server_spans_keep_the_route_not_the_path():
    """Issue 21 (traces), T7: a password link carries its token in the path: a server span keeps
    the route template and loses the path, the target and the full URL."""
    attributes = {
        "http.route": "reset/<uidb64>/<token>/", "http.target": "/reset/MQ/c2x-9f8e7d6c5b4a/?next=/",
        "url.path": "/reset/MQ/c2x-9f8e7d6c5b4a/", "http.url": "http://acme.localhost/reset/MQ/c2x-9f8e7d6c5b4a/",
        "http.status_code": 200,
    }
    assert scrubbed_attributes(attributes, server=True) == {"http.route": "reset/<uidb64>/<token>/", "http.status_code": 200}


def test_sql_loses_its_string_literals():
    """Issue 21 (traces): Django sends values as parameters (never captured); a literal written
    into a statement is blanked all the same."""
    statement = "SELECT 1 FROM runtime_message WHERE text = 'mi cédula es 123' AND kind = E'it''s' AND n = %s"
    assert scrubbed_attributes({"db.statement": statement}, server=False) == {
        "db.statement": "SELECT 1 FROM runtime_message WHERE text = '?' AND kind = '?' AND n = %s"}


def test_exception_events_and_statuses_leave_without_their_messages():
    """Issue 21 (traces): an exception may quote a value (a customer's text in a database error):
    its event keeps the type only, and the span's status its code only."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Scrubbed(exporter)))
    with provider.get_tracer("test").start_as_current_span("turn", kind=SpanKind.INTERNAL,
                                                           record_exception=False, set_status_on_exception=False) as span:
        span.record_exception(ValueError("Key (text)=(mi cédula es 123) already exists"))
        span.set_status(Status(StatusCode.ERROR, "mi cédula es 123"))
    (exported,) = exporter.get_finished_spans()
    assert [(event.name, dict(event.attributes)) for event in exported.events] == [("exception", {"exception.type": "ValueError"})]
    assert exported.status.status_code == StatusCode.ERROR and not exported.status.description
    provider.shutdown()


def test_our_client_spans_name_the_server_and_the_url_without_its_query_or_user_info():
    """Issue 21 (traces), T7: the model client's and the gateway's own request spans
    (`tracing.http_request`) carry the method, the server and its port (the scheme's when the
    URL names none) and the URL without user info, query or fragment."""
    from asixto.tracing import _request_attributes

    assert _request_attributes("POST", "https://user:pa55@models.example.com/v1/chat/completions?key=sk-live-1#x") == {
        "http.request.method": "POST", "url.full": "https://models.example.com/v1/chat/completions",
        "server.address": "models.example.com", "server.port": 443}
    assert _request_attributes("POST", "http://[::1]:8931/mcp") == {
        "http.request.method": "POST", "url.full": "http://[::1]:8931/mcp", "server.address": "::1", "server.port": 8931}
