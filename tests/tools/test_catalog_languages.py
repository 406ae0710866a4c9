"""Findings and sync errors in the reader's language (A3): what a sync stores does not depend on
the language of whoever triggered it. Real SDK servers on loopback, through the services; the
API read with Accept-Language."""

import sys
from pathlib import Path

import pytest
from django.db import connection
from django.utils import translation

from asixto.errors import ApplicationError
from tenants.models import ApprovedCommand
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import good
from tools.models import CatalogVersion, Finding, McpServer, Tool
from tools.services import catalog_sync, server_create

SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "catalog_server.py")


def in_language(code, read):
    with translation.override(code):
        return read()


def test_it_stores_server_findings_as_codes_and_shows_them_in_each_readers_language(alpha):
    """A3, M5: a sync run by an English reader leaves a server finding (a definition left out
    for a duplicate name) that a Spanish reader reads in Spanish, on the row, on the version
    and through the API."""
    duplicated = [good("abrir_caso_soporte"), good("abrir_caso_soporte")]
    with serve_asgi(MutableCatalog(duplicated).app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        with translation.override("en"):
            version = catalog_sync(server=server)
        finding = Finding.objects.get(server=server, tool__isnull=True, rule="M5")
        version = CatalogVersion.objects.get(pk=version.pk)
        assert in_language("es", lambda: finding.message).startswith("Se omitieron algunas definiciones")
        assert in_language("en", lambda: finding.message).startswith("Some tool definitions were left out")
        assert "abrir_caso_soporte" in in_language("es", lambda: finding.message)
        shown = in_language("es", lambda: version.server_findings)
        assert [f["rule"] for f in shown] == ["M5"] and shown[0]["message"].startswith("Se omitieron")
        connection.set_schema_to_public()
    body = alpha.api().get(f"/api/v1/servers/{server.pk}/versions", HTTP_ACCEPT_LANGUAGE="es").json()
    assert body["results"][0]["server_findings"][0]["message"].startswith("Se omitieron")
    body = alpha.api().get(f"/api/v1/servers/{server.pk}/versions", HTTP_ACCEPT_LANGUAGE="en").json()
    assert body["results"][0]["server_findings"][0]["message"].startswith("Some tool definitions")


def test_it_stores_tool_findings_with_their_parameters_and_renders_them_when_read(alpha):
    """A3, M6: a finding with parameters (the model-visible name is too long) keeps the code and
    the parameters, not text: each language renders it with the same values."""
    long_name = "consultar_" + "x" * 50
    with serve_asgi(MutableCatalog([good(long_name)]).app()) as url, alpha.schema():
        server = server_create(data={"slug": "inventario_central", "transport": "streamable_http", "url": f"{url}/mcp"})
        with translation.override("es"):
            catalog_sync(server=server)
        finding = Finding.objects.get(tool__server=server, rule="M6")
    assert finding.message_code and finding.message_params["full"] == f"inventario_central__{long_name}"
    english = in_language("en", lambda: finding.message)
    spanish = in_language("es", lambda: finding.message)
    assert english.startswith("The model sees this tool as") and f"inventario_central__{long_name}" in english
    assert spanish != english and f"inventario_central__{long_name}" in spanish


def test_it_shows_a_sync_error_in_the_readers_language(alpha):
    """A3, M3, A4: a sync that fails (the operator withdrew the server's command) while an
    English reader triggered it shows its error to a Spanish reader in Spanish, on the row and
    through the API."""
    command = ApprovedCommand.objects.create(slug="catalogo", executable=sys.executable, base_args=[SCRIPT])
    with alpha.schema():
        server = server_create(data={"slug": "local", "transport": "stdio", "command": "catalogo"})
    connection.set_schema_to_public()
    ApprovedCommand.objects.filter(pk=command.pk).update(enabled=False)
    with alpha.schema():
        with translation.override("en"), pytest.raises(ApplicationError):
            catalog_sync(server=server)
        server = McpServer.objects.get(pk=server.pk)
        assert in_language("es", lambda: server.sync_error) == "Este comando no está aprobado por el operador de la plataforma."
        assert in_language("en", lambda: server.sync_error) == "This command is not approved by the platform operator."
        connection.set_schema_to_public()
    body = alpha.api().get(f"/api/v1/servers/{server.pk}", HTTP_ACCEPT_LANGUAGE="es").json()
    assert body["sync_status"] == "error" and body["sync_error"].startswith("Este comando no está aprobado")


def test_it_keeps_showing_findings_stored_as_text_before_codes(alpha):
    """A3: findings stored before codes (text in every language) still read in each language."""
    with alpha.schema():
        server = McpServer.objects.create(slug="viejo", transport="streamable_http", url="https://example.com/mcp")
        tool = Tool.objects.create(
            server=server, name="consultar_caso", prefixed_name="viejo__consultar_caso", position=0,
            definition={"name": "consultar_caso"}, definition_hash="0" * 64, level="read",
        )
        old = Finding.objects.create(
            server=server, tool=tool, rule="C2", severity="warning",
            texts={"es": {"message": "Mensaje viejo", "hint": "Pista vieja"}, "en": {"message": "Old message", "hint": "Old hint"}},
        )
        old = Finding.objects.get(pk=old.pk)
    assert in_language("es", lambda: (old.message, old.hint)) == ("Mensaje viejo", "Pista vieja")
    assert in_language("en", lambda: (old.message, old.hint)) == ("Old message", "Old hint")
