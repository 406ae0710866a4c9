"""Dashboard pages for servers and the catalog (A2, T4, T7): register from a form, see findings
and diffs, admins change things, support staff only read."""

from django.db import connection

from examples.soporte.server import build_app
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import broken_per_rule, good
from tools.models import McpServer, Tool
from tools.services import catalog_sync, server_create

FORM = {"slug": "soporte", "name": "Mesa de ayuda", "transport": "streamable_http", "timeout_seconds": "10", "enabled": "on"}


def test_it_registers_a_server_from_the_form_and_hides_its_headers(alpha, django_capture_on_commit_callbacks):
    """M1, T7, A2: the admin registers a server; the headers never come back in a page."""
    client = alpha.dashboard("ana")
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post("/servers/new/", {
            **FORM, "url": "https://93.184.216.34/mcp", "headers_text": "Authorization: Bearer page-secret-77",
        })
    assert response.status_code == 302, response.context["form"].errors
    assert sum("queue_sync" in cb.__qualname__ for cb in callbacks) == 1  # first sync queued
    with alpha.schema():
        server = McpServer.objects.get(slug="soporte")
    assert server.headers == {"Authorization": "Bearer page-secret-77"}
    for url in ("/servers/", f"/servers/{server.pk}/"):
        page = client.get(url).content.decode()
        assert "page-secret-77" not in page and "soporte" in page


def test_it_shows_form_errors_for_bad_servers_and_stores_nothing(alpha, settings):
    """A4, M2: a bad slug, a header line without a colon and a private URL are shown as errors."""
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    client = alpha.dashboard("ana")
    response = client.post("/servers/new/", {**FORM, "slug": "Bad!", "url": "https://93.184.216.34/mcp", "headers_text": "no colon"})
    assert response.status_code == 200 and {"slug", "headers_text"} <= set(response.context["form"].errors)
    response = client.post("/servers/new/", {**FORM, "url": "https://10.0.0.5/mcp"})
    assert response.status_code == 200 and "url" in response.context["form"].errors
    with alpha.schema():
        assert not McpServer.objects.exists()


def test_it_shows_the_catalog_with_certification_findings_and_levels(alpha):
    """A2, C, M7: each tool's model-visible name, level, verdict and findings are on the page."""
    broken = broken_per_rule()["C4"]
    catalog = MutableCatalog([good("abrir_caso_soporte"), {**broken, "name": "crear_cita"}])
    with serve_asgi(catalog.app()) as url, alpha.schema():
        catalog_sync(server=server_create(data={"slug": "citas", "transport": "streamable_http", "url": f"{url}/mcp"}))
    page = alpha.dashboard("sam").get("/catalog/").content.decode()
    assert "citas__abrir_caso_soporte" in page and "citas__crear_cita" in page
    assert "C4" in page and "bloqueada" in page.lower()


def test_it_shows_a_version_diff(alpha):
    """M5, A2: the diff page lists added, removed and changed tools with the changed fields."""
    catalog = MutableCatalog([good("abrir_caso_soporte"), good("crear_cita")])
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "citas", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        catalog.tools[1]["annotations"]["destructiveHint"] = True
        catalog.tools.append(good("cancelar_cita"))
        version = catalog_sync(server=server)
    page = alpha.dashboard("sam").get(f"/catalog/versions/{version.pk}/").content.decode()
    assert "cancelar_cita" in page and "annotations.destructiveHint" in page


def test_it_lets_admins_toggle_tools_and_forbids_support_staff(alpha):
    """T4, C: enabling/disabling is for admins; support gets 403 and nothing changes."""
    with serve_asgi(build_app()) as url, alpha.schema():
        catalog_sync(server=server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"}))
        tool = Tool.objects.get(name="buscar_producto")
    support = alpha.dashboard("sam")
    assert support.post(f"/tools/{tool.pk}/toggle/").status_code == 403
    assert support.post("/servers/new/", {**FORM, "url": "https://93.184.216.34/mcp"}).status_code == 403
    assert support.post(f"/tools/{tool.pk}/", {"sample_arguments": "{}"}).status_code == 403
    with alpha.schema():
        assert Tool.objects.get(pk=tool.pk).enabled is True
    assert alpha.dashboard("ana").post(f"/tools/{tool.pk}/toggle/").status_code == 302
    with alpha.schema():
        assert Tool.objects.get(pk=tool.pk).enabled is False


def test_it_keeps_bad_sample_arguments_out(alpha):
    """A4, C8: sample arguments that are not a JSON object are refused with a message."""
    with serve_asgi(build_app()) as url, alpha.schema():
        catalog_sync(server=server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"}))
        tool = Tool.objects.get(name="consultar_caso")
    response = alpha.dashboard("ana").post(f"/tools/{tool.pk}/", {"sample_arguments": "[1, 2"})
    assert response.status_code == 200 and "sample_arguments" in response.context["form"].errors
    with alpha.schema():
        assert Tool.objects.get(pk=tool.pk).sample_arguments is None


def test_it_reports_sync_status_for_the_progress_poll(alpha, beta):
    """M5, A2, T1: the servers page polls a small status document while a sync runs; another
    tenant's user cannot read it."""
    with alpha.schema():
        server = McpServer.objects.create(slug="x", transport="streamable_http", url="https://93.184.216.34/mcp", sync_status="running")
    connection.set_schema_to_public()
    body = alpha.dashboard("sam").get(f"/servers/{server.pk}/status/").json()
    assert body["status"] == "running" and body["tools"] == 0
    assert beta.dashboard("sam").get(f"/servers/{server.pk}/status/").status_code == 404
