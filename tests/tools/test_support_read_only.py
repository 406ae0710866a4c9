"""Support staff read; they are shown no field they cannot save (T4, A2, issue 20): on a server's
contract page and a tool's sample arguments every field of a form that changes something is
disabled or read-only for them, and editable for an admin."""

from html.parser import HTMLParser

import pytest

from tools.models import McpServer, Tool

# Forms every page has that anyone may send: the language menu and signing out.
ANYONE = ("/i18n/setlang/", "/logout/")


class EditableFields(HTMLParser):
    """The fields a reader can type into or change, inside forms that POST."""

    def __init__(self):
        super().__init__()
        self.in_post_form, self.fieldsets, self.editable = False, [], []  # fieldsets: open ones, disabled or not

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.in_post_form = attrs.get("method", "get").lower() == "post" and not attrs.get("action", "").endswith(ANYONE)
        elif tag == "fieldset":
            self.fieldsets.append("disabled" in attrs)
        elif tag in ("input", "select", "textarea") and self.in_post_form and not any(self.fieldsets):
            if attrs.get("type") in ("hidden", "submit", "button"):
                return
            if "disabled" not in attrs and "readonly" not in attrs:
                self.editable.append(attrs.get("name"))

    def handle_endtag(self, tag):
        if tag == "form":
            self.in_post_form = False
        elif tag == "fieldset" and self.fieldsets:
            self.fieldsets.pop()

    @classmethod
    def of(cls, html):
        reader = cls()
        reader.feed(html)
        return reader.editable


@pytest.fixture
def tool(alpha):
    with alpha.schema():
        server = McpServer.objects.create(slug="crm", transport="streamable_http", url="https://crm.example.com/mcp",
                                          sync_status=McpServer.SyncStatus.OK)
        return Tool.objects.create(
            server=server, name="buscar", prefixed_name="crm__buscar", position=0, level="read", definition_hash="h",
            definition={"name": "buscar", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
            certification=Tool.Certification.CERTIFIED, certified_hash="h",
        )


@pytest.mark.parametrize("page", ["contract", "tool"])
def test_support_staff_see_no_field_they_cannot_save(alpha, tool, page):
    """T4: the contract page's overlays and mode, and a tool's sample arguments, are read-only
    for support staff; the same fields are editable for an admin."""
    path = {"contract": f"/servers/{tool.server_id}/contract/", "tool": f"/tools/{tool.pk}/"}[page]
    support = alpha.dashboard("sam").get(path)
    admin = alpha.dashboard("ana").get(path)
    assert support.status_code == admin.status_code == 200
    assert EditableFields.of(support.content.decode()) == []
    assert EditableFields.of(admin.content.decode()), "the admin's page has fields to edit"
