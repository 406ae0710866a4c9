"""The overview's state is honest (A2, issue 20): anything that keeps the agent from answering —
no model, a model that fails, no tool it may use — is a problem named on the overview with a
link to where it is fixed, next to the servers, tools and calls that need attention; "everything
is fine" only when nothing is listed."""

import re
import uuid

from django.utils import timezone

from runtime.models import Conversation, Message, Turn
from tools.models import McpServer, Tool, ToolCall

ALL_CLEAR = {"en": "Everything is fine", "es": "Todo está bien"}


def _with_model(world):
    world.tenant.model_base_url, world.tenant.model_name = "https://models.example.com/v1", "qwen2.5"
    world.tenant.save(update_fields=["model_base_url", "model_name"])


def _usable_tool(world, slug="crm", *, status=McpServer.SyncStatus.OK, certification=Tool.Certification.CERTIFIED):
    with world.schema():
        server = McpServer.objects.create(slug=slug, transport="streamable_http", url=f"https://{slug}.example.com/mcp",
                                          sync_status=status)
        return Tool.objects.create(server=server, name="buscar", prefixed_name=f"{slug}__buscar", position=0,
                                   definition={"name": "buscar"}, definition_hash="h", certified_hash="h", level="read",
                                   certification=certification)


def _failed_turn(world, code):
    with world.schema():
        conversation = Conversation.objects.create(language="es")
        message = Message.objects.create(conversation=conversation, role="customer", text="hola")
        return Turn.objects.create(conversation=conversation, message=message, status=Turn.Status.FAILED, error_code=code,
                                   error_detail="HTTP 503: overloaded", finished_at=timezone.now())


def _overview(world, language, user="sam"):
    response = world.dashboard(user).get("/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


def _problems(html):
    block = re.search(r'<ul id="overview-problems">(.*?)</ul>', html, flags=re.S)
    return re.findall(r"<li>(.*?)</li>", block.group(1), flags=re.S) if block else []


def test_it_does_not_say_all_is_well_without_a_model(alpha):
    """A2, R11, T6: servers synced and a certified tool, but no model: the overview names the
    missing model as a problem, linked to the agent settings for admins (support staff, who
    cannot change them, to the conversations), in both languages."""
    _usable_tool(alpha)
    for language in ("en", "es"):
        html = _overview(alpha, language, user="ana")
        assert ALL_CLEAR[language] not in html
        [problem] = _problems(html)
        assert 'href="/settings/"' in problem
    [problem] = _problems(_overview(alpha, "en"))
    assert "no model" in problem and 'href="/conversations/"' in problem


def test_it_says_all_is_well_only_when_nothing_is_listed(alpha):
    """A2: a model, a usable tool, no failure: the all-clear, and no problem list."""
    _with_model(alpha)
    _usable_tool(alpha)
    html = _overview(alpha, "en")
    assert ALL_CLEAR["en"] in html and _problems(html) == []


def test_it_lists_each_problem_with_its_link(alpha):
    """A2, R11: a failing model (the latest turn failed on it), no tool the agent may use (the
    only one is blocked), a server whose sync failed, the blocked tool, a failed call: five
    problems, each named and linked, and the count says five."""
    _with_model(alpha)
    _usable_tool(alpha, status=McpServer.SyncStatus.ERROR, certification=Tool.Certification.BLOCKED)
    failed = _failed_turn(alpha, "model_http_error")
    with alpha.schema():
        ToolCall.objects.create(tool_name="crm__buscar", channel="chat", idempotency_key=uuid.uuid4().hex,
                                outcome="timeout", started_at=timezone.now())
    html = _overview(alpha, "en")
    problems = _problems(html)
    assert ALL_CLEAR["en"] not in html and "things need attention" in html
    assert len(problems) == 5, problems
    expected_links = [f"/conversations/{failed.conversation_id}/#turn-{failed.pk}", "/catalog/", "/servers/",
                      "/catalog/?certification=blocked", "/calls/?outcome=timeout"]
    for link in expected_links:
        assert sum(f'href="{link}"' in problem for problem in problems) == 1, (link, problems)
    assert "5 things need attention" in html
    spanish = _overview(alpha, "es")
    assert "5 asuntos requieren atención" in spanish and len(_problems(spanish)) == 5
