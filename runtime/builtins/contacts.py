"""Contact details (R12): `asixto__capture_contact` stores what the customer gave (name, email,
phone) for the company to use, once per step (R10). Values are checked, not trusted."""

import re

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext as _

from runtime.builtins.models import ContactCapture
from runtime.builtins.registry import BuiltinTool, Refusal, Result, definition, reasons, register

PHONE = re.compile(r"^\+?[0-9][0-9 ()./-]{5,30}$")


def _capture(arguments, context) -> Result:
    name = arguments.get("name", "").strip()
    email = arguments.get("email", "").strip()
    phone = arguments.get("phone", "").strip()
    if not (name or email or phone):
        raise Refusal(_("Give at least one of name, email or phone, as the customer wrote it."))
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise Refusal(_("“%(value)s” is not an email address. Ask the customer to write it again.") % {"value": email})
    if phone and not PHONE.match(phone):
        raise Refusal(_("“%(value)s” is not a phone number. Ask the customer to write it again.") % {"value": phone})
    row, _created = ContactCapture.objects.get_or_create(idempotency_key=context.idempotency_key, defaults={
        "turn_id": context.turn_id, "conversation_id": context.conversation_id or None, "name": name, "email": email,
        "phone": phone})
    return Result({"id": str(row.pk), "saved": [key for key in ("name", "email", "phone") if getattr(row, key)]})


register(BuiltinTool(
    definition(
        name="capture_contact", title="Capture contact details",
        description="Saves the contact details the customer gave in the conversation (name, email, phone). "
                    "Never invent a value: pass only what the customer wrote.",
        properties={"name": {"type": "string", "maxLength": 200}, "email": {"type": "string", "maxLength": 254},
                    "phone": {"type": "string", "maxLength": 40}},
        required=[], output={"properties": {"id": {"type": "string"}, "saved": {"type": "array"}}, "required": ["id"]},
        verb="save contact details", capabilities=["builtin"], idempotent=False),
    run=_capture,
    reasons=reasons(r"\bmi (correo|email|e-mail|mail|telefono|celular|numero|whatsapp)\b", r"\bmy (e-?mail|phone|number)\b",
                    r"\bme llamo\b", r"\bmy name is\b", r"[\w.+-]+@[\w-]+\.[\w.]+", r"\+?\d[\d ()-]{7,}\d"),
))
