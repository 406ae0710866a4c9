"""One language at a time (A3): every dashboard page, in Spanish and in English, shows no text of
the other language; the error pages use the layout and the browser's language; and
`makemessages` leaves no Spanish entry untranslated or fuzzy.

The known texts are the catalog's own: every msgid whose Spanish differs is English that must
not show in a Spanish page, and its Spanish must not show in an English one. Text a tenant or a
server wrote (tool names, definitions, arguments) is data, not interface, and is left out."""

import json
import re
import shutil
import subprocess
import sys
import uuid
from contextlib import contextmanager
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from accounts.models import User
from examples.soporte.definitions import ABRIR_CASO_SOPORTE
from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.builtins.models import Skill
from runtime.models import ChannelWebhook, Conversation, Message, TruncationLog, Turn, WebhookDelivery
from tests.support.mcp_servers import serve_asgi
from tests.support.po import parse
from tests.tools.gateway_support import certified_tool
from tenants.models import ApiKey
from tools.models import CatalogVersion, Tool, ToolCall

ROOT = Path(settings.BASE_DIR)
PLACEHOLDER = re.compile(r"%\(\w+\)[sdfr]|%[sdfr]|\{\w*\}|<[^>]+>|«[^»]*»")
LANGUAGES = ("es", "en")
# The command the catalogs are made with (README, "Translations").
MAKEMESSAGES = ["makemessages", "-l", "es", "-l", "en", "--ignore=tests", "--ignore=bench"]


def catalog(language="es"):
    return parse((ROOT / "locale" / language / "LC_MESSAGES" / "django.po").read_text())


def _chunks(text):
    """The literal runs of a message long enough to be telling: two words and ten letters."""
    chunks = (chunk.strip(" .,:;?¿!¡()–—-\n") for chunk in PLACEHOLDER.split(text))
    return [chunk for chunk in chunks if len(chunk) >= 10 and len(chunk.split()) >= 2]


def probes():
    """English texts that must not show in Spanish pages, and the reverse."""
    english, spanish = set(), set()
    for entry in catalog():
        pairs = [(entry.msgid, entry.msgstr.get("0", ""))]
        if entry.msgid_plural:
            pairs.append((entry.msgid_plural, entry.msgstr.get("1", "")))
        for source, translated in pairs:
            if not translated or source == translated:
                continue
            english |= set(_chunks(source)) - set(_chunks(translated))
            spanish |= set(_chunks(translated)) - set(_chunks(source))
    return {"es": english, "en": spanish}


class VisibleText(HTMLParser):
    """What a reader sees: text nodes and the attributes shown to them, without scripts, styles,
    and the tenant's own data (pre and code blocks: definitions, arguments, names; anything
    marked translate="no", HTML's own mark for text that is not to be translated)."""

    SKIP = {"script", "style", "pre", "code", "textarea"}
    SHOWN = {"title", "placeholder", "aria-label", "data-confirm", "alt"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skipping = [], []

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP or dict(attrs).get("translate") == "no":
            self.skipping.append(tag)
        self.parts += [value for name, value in attrs if name in self.SHOWN and value]
        if tag == "input" and dict(attrs).get("type") in {"submit", "button"}:
            self.parts.append(dict(attrs).get("value") or "")

    def handle_endtag(self, tag):
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)

    @classmethod
    def of(cls, html):
        reader = cls()
        reader.feed(html)
        # One piece per text node, kept apart: two neighbouring options must not read as one text.
        return " ¦ ".join(" ".join(part.split()) for part in reader.parts if part.strip())


def leaks(html, language, known):
    text = VisibleText.of(html)
    return sorted(probe for probe in known[language] if probe in text)


@pytest.fixture
def world(alpha, settings):
    settings.ALLOWED_HOSTS = ["*"]
    with something_on_every_page(alpha) as objects:
        yield objects


@contextmanager
def something_on_every_page(world_):
    """`world_` with something on every page: a server, a write tool and a blocked one, a catalog
    version, a call with a violation, a second person, a conversation with a failed turn, a skill,
    truncations for the chart, a webhook with a failed delivery; names as long as real ones. Yields the objects page_args() needs; the server stops after."""
    desk = SupportDesk()
    with serve_asgi(build_app(desk)) as url:
        tool = certified_tool(world_, url, definition=ABRIR_CASO_SOPORTE, slug="soporte_tecnico")
        with world_.schema():
            blocked = Tool.objects.create(
                server=tool.server, name="borrar", prefixed_name="soporte_tecnico__borrar", position=1, definition={"name": "borrar"},
                definition_hash="h", level="destructive", certification=Tool.Certification.BLOCKED,
            )
            version = CatalogVersion.objects.create(server=tool.server, number=1, tool_count=2, diff={"added": ["abrir_caso_soporte"]})
            call = ToolCall.objects.create(
                tool=tool, tool_name=tool.prefixed_name, channel="chat", idempotency_key="k", outcome="invalid_output",
                started_at=timezone.now(), violations=[{"kind": "output_schema", "detail": "x"}], request_ids=["req_1"],
                attempt_ms=[3.5], model_text="…", error_code="http_status",
                error_params={"where": "soporte", "status": 502, "method": "tools/call"},
            )
            person = User.objects.get(username="sam")
            conversation = Conversation.objects.create(channel_kind="chat", channel_name="whatsapp", language="es", customer_ref="573001234567")
            message = Message.objects.create(conversation=conversation, role="customer", text="¿Tienen routers?")
            turn = Turn.objects.create(conversation=conversation, message=message, status=Turn.Status.FAILED, error_code="model_not_configured")
            for days, kept in ((0, 3000), (2, 2500), (9, 4000)):
                log = TruncationLog.objects.create(turn=turn, conversation=conversation, tool_name=tool.prefixed_name, kind="result",
                                                   original_chars=9000, kept_chars=kept)
                TruncationLog.objects.filter(pk=log.pk).update(created_at=timezone.now() - timedelta(days=days))
            key = ApiKey.objects.get(tenant=world_.tenant, scope=ApiKey.Scope.CHANNEL)
            webhook = ChannelWebhook.objects.create(api_key_id=key.pk, api_key_prefix=key.prefix, url="https://crm.example.com/asixto/turnos")
            WebhookDelivery.objects.create(webhook=webhook, turn=turn, delivery_id=uuid.uuid4(), attempt=1, url=webhook.url,
                                           outcome=WebhookDelivery.Outcome.RETRYING, error_code="timeout", error_params={"seconds": 10},
                                           duration_ms=10003.4)
            skill = Skill.objects.create(name="garantias", description="Trámite de garantías", triggers="garantía",
                                         instructions="Pide la factura.", tools=[tool.prefixed_name])
        yield {"skill": skill, "conversation": conversation, "tool": tool, "blocked": blocked, "version": version, "call": call, "person": person, "server": tool.server}


def page_args(name, objects):
    """Example arguments for each dashboard page that takes some."""
    return {
        "server_edit": {"pk": objects["server"].pk}, "server_versions": {"pk": objects["server"].pk},
        "server_contract": {"pk": objects["server"].pk}, "server_offerings": {"pk": objects["server"].pk},
        "server_accept_suggestions": {"pk": objects["server"].pk},
        "skill": {"pk": objects["skill"].pk},
        "catalog_version": {"pk": objects["version"].pk}, "tool": {"pk": objects["tool"].pk},
        "call": {"pk": objects["call"].pk}, "conversation": {"pk": objects["conversation"].pk}, "password_reset": {"uidb64": "MQ", "token": "not-a-token"},
    }.get(name)


def dashboard_pages(objects):
    """Every GET page of the dashboard URLconf, with its path."""
    found = []

    def walk(patterns, namespace=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace == "dashboard" or namespace:
                    walk(pattern.url_patterns, pattern.namespace or namespace)
            elif isinstance(pattern, URLPattern) and namespace == "dashboard" and pattern.name:
                found.append(pattern)

    walk(get_resolver("asixto.urls").url_patterns)
    pages = []
    for pattern in found:
        if pattern.name in NOT_PAGES:
            continue
        kwargs = page_args(pattern.name, objects)
        if kwargs is None:
            # A page not listed above gets made-up arguments: fine for POST-only endpoints (405
            # before any lookup); a real page then answers 404 and the test asks for an example.
            kwargs = {name: PLACEHOLDER_ARGUMENT.get(type(converter).__name__, "x") for name, converter in pattern.pattern.converters.items()}
        pages.append((pattern.name, reverse(f"dashboard:{pattern.name}", kwargs=kwargs)))
    return pages


# Endpoints that answer data for a page's script, not a page: the sync poll (JSON), a turn's
# event stream (SSE) and its tool calls for the playground (JSON).
NOT_PAGES = {"server_status", "turn_events", "turn_calls"}
PLACEHOLDER_ARGUMENT = {"UUIDConverter": "00000000-0000-4000-8000-000000000000", "IntConverter": 999999}


def render_all(world_, objects, language):
    """(label, html) for every page and state, rendered in `language`."""
    header = {"HTTP_ACCEPT_LANGUAGE": language}
    admin, anonymous = world_.dashboard("ana"), Client(HTTP_HOST=world_.domain)
    rendered = []
    for name, path in dashboard_pages(objects):
        client = anonymous if name in {"login", "password_forgot", "password_reset"} else admin
        response = client.get(path, follow=name == "password_reset", **header)
        if response.status_code == 405 or not response["Content-Type"].startswith("text/html"):
            continue  # a POST endpoint or the sync poll's JSON: no page of its own
        assert response.status_code == 200, f"{name} ({path}) answered {response.status_code}: add example arguments in page_args()"
        rendered.append((name, response.content.decode()))
    tool = objects["tool"]
    case = json.dumps({"documento": "1", "tipo": "falla", "descripcion": "x"})
    states = {
        "console confirmation": admin.post(f"/tools/{tool.pk}/", {"arguments": case, "channel": "chat"}, **header),
        "console refusal": admin.post(f"/tools/{tool.pk}/", {"arguments": "{", "channel": "chat"}, **header),
        "console outcome": admin.post(f"/tools/{tool.pk}/", {"arguments": json.dumps({"documento": ""}), "channel": "chat", "confirmed": "yes"}, **header),
        "blocked tool": admin.get(f"/tools/{objects['blocked'].pk}/", **header),
        "server form errors": admin.post("/servers/new/", {"slug": "Bad!", "transport": "stdio"}, **header),
        "people form errors": admin.post("/people/", {"username": "ana", "role": "support"}, **header),
        "settings form errors": admin.post("/settings/", {"iteration_limit": "0"}, **header),
        "password change errors": admin.post("/account/password/", {"old_password": "x"}, **header),
        "sign-in error": anonymous.post("/login/", {"username": "ana", "password": "wrong"}, **header),
        "message after a change": admin.post(f"/people/{objects['person'].pk}/", {"role": "support"}, follow=True, **header),
        "403": world_.dashboard("sam").get("/settings/", **header),
        "404": admin.get("/no-such-page/", **header),
        "404 anonymous": anonymous.get("/no-such-page/", **header),
        "landing": Client(HTTP_HOST="localhost:8000").get("/", **header),
    }
    with override_settings(ROOT_URLCONF="tests.crash_urls"):
        crashing = world_.dashboard("ana")
        crashing.raise_request_exception = False
        states["500"] = crashing.get("/crash/", **header)
    for label, response in states.items():
        rendered.append((label, response.content.decode()))
    return rendered


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_shows_one_language(alpha, world, language):
    """A3: no English text in a Spanish page, and no Spanish in an English one — pages, forms
    with their errors, messages, the console's states, and the 403/404/500 pages."""
    known = probes()
    assert len(known["es"]) > 100 and len(known["en"]) > 100
    found = {label: leaks(html, language, known) for label, html in render_all(alpha, world, language)}
    assert {"servers", "catalog", "tool", "call", "people", "settings", "conversation", "500", "404", "console outcome"} <= set(found)
    assert not {label: texts for label, texts in found.items() if texts}, f"other-language text in {language} pages"


@pytest.mark.parametrize("language, title", [("es", "Algo salió mal"), ("en", "Something went wrong")])
def test_the_error_pages_use_the_layout_and_the_browsers_language(alpha, language, title):
    """A3: 404 and 500 pages are the dashboard's layout, in the browser's language."""
    client = alpha.dashboard("ana")
    not_found = client.get("/no-such-page/", HTTP_ACCEPT_LANGUAGE=language)
    assert not_found.status_code == 404 and f'<html lang="{language}">' in not_found.content.decode()
    assert 'class="topbar"' in not_found.content.decode()
    with override_settings(ROOT_URLCONF="tests.crash_urls"):
        client.raise_request_exception = False
        failed = client.get("/crash/", HTTP_ACCEPT_LANGUAGE=language)
    page = failed.content.decode()
    assert failed.status_code == 500 and f'<html lang="{language}">' in page and 'class="topbar"' in page and title in page


def test_the_catalogs_leave_nothing_untranslated():
    """A3: every Spanish entry is translated and none is fuzzy; the compiled catalogs are current."""
    for entry in catalog("es"):
        assert entry.translated and not entry.fuzzy, (entry.msgid, entry.references[:2])
    for language in LANGUAGES:
        po = ROOT / "locale" / language / "LC_MESSAGES" / "django.po"
        mo = po.with_suffix(".mo")
        assert mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime - 1, f"run compilemessages for {language}"


@pytest.mark.skipif(not shutil.which("msgmerge"), reason="makemessages needs GNU gettext")
def test_makemessages_finds_nothing_new_to_translate(tmp_path):
    """A3: running makemessages on a copy of the sources adds no entry without a translation —
    every string in the code is in the catalog, translated."""
    copy = tmp_path / "src"
    ignore = shutil.ignore_patterns(".venv", "node_modules", "var", ".git", "__pycache__", "*.pyc", "docs")
    shutil.copytree(ROOT, copy, ignore=ignore, symlinks=True)
    result = subprocess.run(
        [sys.executable, "manage.py", *MAKEMESSAGES], cwd=copy, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "tests.settings", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    entries = parse((copy / "locale" / "es" / "LC_MESSAGES" / "django.po").read_text())
    missing = [entry.msgid for entry in entries if not entry.translated or entry.fuzzy]
    assert not missing, f"translate these in locale/es (then compilemessages): {missing[:20]}"
    assert {entry.msgid for entry in entries} == {entry.msgid for entry in catalog("es")}, "locale/ is not current: run makemessages"


def test_the_po_reader_sees_what_gettext_sees(tmp_path):
    """The small .po reader above: untranslated, fuzzy, plural and obsolete entries."""
    po = tmp_path / "x.po"
    po.write_text(
        'msgid ""\nmsgstr "Language: es\\n"\n\n#, fuzzy\nmsgid "a"\nmsgstr "b"\n\nmsgid "c"\nmsgstr ""\n\n'
        'msgid "one"\nmsgid_plural "many"\nmsgstr[0] "uno"\nmsgstr[1] ""\n\nmsgid ""\n"multi "\n"line"\nmsgstr "varias líneas"\n\n'
        '#~ msgid "old"\n#~ msgstr ""\n'
    )
    entries = {entry.msgid: entry for entry in parse(po.read_text())}
    assert set(entries) == {"a", "c", "one", "multi line"}
    assert entries["a"].fuzzy and not entries["c"].translated and not entries["one"].translated
    assert entries["multi line"].translated and entries["multi line"].msgstr == {"0": "varias líneas"}
