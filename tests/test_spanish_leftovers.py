"""Spanish pages read as Spanish (A3, issue 20): the words a new tenant admin found in English —
single words and codes that the catalog-wide check (tests/test_languages.py, two words or more)
cannot see — and the wording that read wrong (tú on the landing page, "Inglés" in the language
menu, durations named for dates) are gone from the main pages, the landing page and the
operators' admin."""

import re

import pytest
from django.test import Client
from django.utils import timezone

from runtime.models import Conversation, Message, TruncationLog, Turn
from tenants.management.commands.demo_setup import DEMO_KEY_NAME
from tenants.models import ApiKey
from tenants.services import api_key_create
from tests.tenants.test_operator_admin import operator
from tests.test_languages import VisibleText
from tools.models import McpServer, Tool

# Whole words (or exact runs) that are English or wrong on a Spanish page.
LEFTOVERS = ["Slug", "slug", "endpoint", "endpoints", "workers", "worker", "boolean", "| null", "model_not_configured",
             "Demo key", "Inglés", "no model endpoint"]
TU_FORMS = ["tus", "tu", "puedes", "tienes", "quieres"]
ADMIN_LEFTOVERS = ["Api keys", "Approved commands", "Approved private hosts", "Tenants", "Host privado aprobados",
                   "Django administration", "Administración de Django", "Sitio de administración de Django"]


class WithCodes(VisibleText):
    """The visible text, <code> included: an error code is English to this reader. Definitions
    and arguments (<pre>, <textarea>) are the tenant's data and stay out."""

    SKIP = VisibleText.SKIP - {"code"}


def words_found(text, words):
    return sorted(word for word in words if re.search(rf"(?<![\w|]){re.escape(word)}(?!\w)", text))


@pytest.fixture
def objects(alpha, settings):
    settings.ALLOWED_HOSTS = ["*"]
    api_key_create(tenant=alpha.tenant, name=DEMO_KEY_NAME, scope=ApiKey.Scope.ADMIN)
    with alpha.schema():
        server = McpServer.objects.create(slug="crm", transport="streamable_http", url="https://crm.example.com/mcp",
                                          sync_status=McpServer.SyncStatus.OK)
        schema = {"type": "object", "properties": {"nombre": {"type": "string"}, "activo": {"type": ["boolean", "null"]}},
                  "required": ["nombre"], "additionalProperties": False}
        tool = Tool.objects.create(server=server, name="buscar", prefixed_name="crm__buscar", position=0, level="read",
                                   definition={"name": "buscar", "inputSchema": schema}, definition_hash="h", certified_hash="h",
                                   certification=Tool.Certification.CERTIFIED)
        conversation = Conversation.objects.create(language="es")
        message = Message.objects.create(conversation=conversation, role="customer", text="hola")
        Turn.objects.create(conversation=conversation, message=message, status=Turn.Status.FAILED, finished_at=timezone.now(),
                            error_code="model_not_configured", error_detail="no model endpoint or model name in the agent settings")
    return {"server": server, "tool": tool, "conversation": conversation}


def test_the_main_pages_hold_none_of_the_english_leftovers(alpha, objects):
    """A3: overview, servers, catalog, a tool with its console, a contract, a failed turn, the
    playground, agent settings, API keys, truncations and webhooks, in Spanish."""
    client = alpha.dashboard("ana")
    paths = ["/", "/servers/", f"/servers/{objects['server'].pk}/", "/catalog/", f"/tools/{objects['tool'].pk}/",
             f"/servers/{objects['server'].pk}/contract/", f"/conversations/{objects['conversation'].pk}/", "/playground/",
             "/settings/", "/api-keys/", "/truncations/", "/webhooks/", "/conversations/"]
    found = {}
    for path in paths:
        response = client.get(path, HTTP_ACCEPT_LANGUAGE="es")
        assert response.status_code == 200, path
        text = WithCodes.of(response.content.decode())
        found[path] = words_found(text, LEFTOVERS) + words_found(text, TU_FORMS)
    assert not {path: words for path, words in found.items() if words}, found
    menu = re.search(r'<select name="language".*?</select>', client.get("/").content.decode(), flags=re.S).group(0)
    assert ">English<" in menu and ">Español<" in menu


def test_the_playground_explains_a_failed_turn_in_spanish(alpha, objects):
    """A3: the playground says why a turn failed in the reader's language, not with its code."""
    page = alpha.dashboard("ana").get("/playground/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    errors = re.search(r'<script id="turn-errors" type="application/json">(.*?)</script>', page, flags=re.S).group(1)
    assert '"model_not_configured": "La configuraci' in errors
    assert '" (" + data.error + ")"' not in page


def test_date_columns_are_named_as_dates(alpha, objects):
    """A3: the truncation log and the webhook deliveries name their date columns as dates."""
    client = alpha.dashboard("ana")
    for path, heading in (("/truncations/", "Fecha"), ("/webhooks/", "Enviado")):
        page = client.get(path, HTTP_ACCEPT_LANGUAGE="es").content.decode()
        assert f"<th>{heading}</th>" in page, path


def test_one_truncation_is_one_recorte(alpha, objects):
    """A3, issue 20 ("1 recortes"): the truncation chart's count agrees with its number."""
    with alpha.schema():
        turn = Turn.objects.get(conversation=objects["conversation"])
        TruncationLog.objects.create(turn=turn, conversation=objects["conversation"], tool_name="crm__buscar", kind="result",
                                     original_chars=9000, kept_chars=3000)
    page = alpha.dashboard("sam").get("/truncations/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    title = re.search(r'<title id="chart-title">(.*?)</title>', page, flags=re.S).group(1)
    assert title.startswith("1 recorte del "), title


def test_the_landing_page_says_usted(alpha):
    """A3: the landing page speaks to its reader as the dashboard does (usted)."""
    page = Client(HTTP_HOST="localhost:8000").get("/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert words_found(VisibleText.of(page), TU_FORMS) == [] and "sus clientes" in page


def test_the_operators_admin_is_asixtos_and_spanish(worlds, db):
    """A3, T5: the operators' admin is branded Asixto, names its models in the reader's language."""
    client = operator(db)
    page = client.get("/admin/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    text = VisibleText.of(page)
    assert "Asixto" in text and words_found(text, ADMIN_LEFTOVERS) == [], words_found(text, ADMIN_LEFTOVERS)
    for name in ("Empresas", "Claves de API", "Comandos aprobados", "Hosts privados aprobados"):
        assert name in text, name
