"""Documents (R12): `asixto__edit_document` appends to a tenant document, or replaces a piece of
its text. The document lives in the tenant's schema; a re-sent step edits it once (R10)."""

from django.db import transaction
from django.utils.translation import gettext as _

from runtime.builtins.models import Document
from runtime.builtins.registry import BuiltinTool, Refusal, Result, definition, reasons, register

MAX_DOCUMENT_CHARS = 200_000


def _edit(arguments, context) -> Result:
    name, mode, text = arguments["document"].strip(), arguments["mode"], arguments["text"]
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(name=name).first()
        if document is None:
            if mode != "append":
                raise Refusal(_("There is no document named “%(name)s”: nothing to replace.") % {"name": name})
            document = Document.objects.create(name=name)
        if document.last_edit_key != context.idempotency_key:
            if mode == "append":
                updated = f"{document.text}\n{text}" if document.text else text
            else:
                find = arguments.get("find", "")
                if not find or find not in document.text:
                    raise Refusal(_("The text to replace is not in “%(name)s”. Read it again or append instead.") % {
                        "name": name})
                updated = document.text.replace(find, text, 1)
            if len(updated) > MAX_DOCUMENT_CHARS:
                raise Refusal(_("The document would be too long (at most %(max)d characters).") % {"max": MAX_DOCUMENT_CHARS})
            Document.objects.filter(pk=document.pk).update(text=updated, last_edit_key=context.idempotency_key)
            document.text = updated
    return Result({"document": document.name, "chars": len(document.text)})


register(BuiltinTool(
    definition(
        name="edit_document", title="Edit a document",
        description="Appends text to a company document, or replaces a piece of its text (mode replace, with "
                    "the exact text to find).",
        properties={"document": {"type": "string", "minLength": 1, "maxLength": 100},
                    "mode": {"type": "string", "enum": ["append", "replace"]},
                    "text": {"type": "string", "maxLength": 20_000},
                    "find": {"type": "string", "maxLength": 20_000}},
        required=["document", "mode", "text"],
        output={"properties": {"document": {"type": "string"}, "chars": {"type": "integer"}}, "required": ["document"]},
        verb="edit a document", capabilities=["builtin"], destructive=True, idempotent=False),
    run=_edit,
    reasons=reasons(r"\bdocumento\b", r"\bdocument\b", r"\b(anota|apunta)(lo|la|r)?\b", r"\bnota(s)?\b", r"\bnotes?\b",
                    r"\bacta\b"),
))
