"""Dates the dashboard's people type, read in the page's language (issue 20).

Chromium draws `<input type="date">` in the browser's locale, not the page's: a Spanish page in an
English browser asked for mm/dd/yyyy, an English page in a Spanish browser for dd/mm/yyyy. These
fields are plain text instead. The page's language decides how a date is written: its first
DATE_INPUT_FORMATS (DATETIME_INPUT_FORMATS for a moment), from asixto/formats and then Django's
own locale files, is how a value is shown and what the field's hint and error spell out; every
format of the language is read, and ISO dates (2026-12-31) in any language, so links and
bookmarks keep working."""

import re
from datetime import date, datetime

from django import forms
from django.core.exceptions import ValidationError
from django.utils import formats, timezone
from django.utils.translation import gettext_lazy as _

# How each strftime piece reads in a hint: "dd/mm/yyyy" in English, "dd/mm/aaaa" in Spanish.
PIECES = {"%d": "dd", "%m": "mm", "%Y": _("yyyy"), "%y": _("yy"), "%H": "hh", "%M": "mm", "%S": "ss"}


def written_pattern(format_key: str) -> str:
    """The active language's first input format as a person reads it: "dd/mm/aaaa"."""
    return re.sub(r"%[a-zA-Z]", lambda piece: str(PIECES.get(piece.group(), "")), formats.get_format(format_key)[0])


def _example(format_key: str) -> str:
    # The last day of the year: day and month cannot be mistaken for each other.
    year = timezone.localdate().year
    moment = date(year, 12, 31) if format_key == "DATE_INPUT_FORMATS" else datetime(year, 12, 31, 18, 30)
    return formats.localize_input(moment, formats.get_format(format_key)[0])


class _TypedInputMixin:
    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["widget"]["attrs"].setdefault("placeholder", written_pattern(self.format_key))
        context["widget"]["attrs"].setdefault("autocomplete", "off")
        return context


class TypedDateInput(_TypedInputMixin, forms.DateInput):
    """A text field showing a date as the page's language writes it, its pattern as the hint."""

    def __init__(self, attrs=None):
        super().__init__({"class": "typed-date", **(attrs or {})})


class TypedDateTimeInput(_TypedInputMixin, forms.DateTimeInput):
    def __init__(self, attrs=None):
        super().__init__({"class": "typed-datetime", **(attrs or {})})


class _TypedFieldMixin:
    """Input that reads as no date of the language says how to write one, with an example."""

    format_key = ""
    default_error_messages = {"invalid": _("Write the date as %(pattern)s, for example %(example)s.")}

    def to_python(self, value):
        try:
            return super().to_python(value)
        except ValidationError as error:
            if error.code != "invalid":
                raise
            raise ValidationError(self.error_messages["invalid"], code="invalid",
                                  params={"pattern": written_pattern(self.format_key), "example": _example(self.format_key)})


class TypedDateField(_TypedFieldMixin, forms.DateField):
    format_key = "DATE_INPUT_FORMATS"
    widget = TypedDateInput


class TypedDateTimeField(_TypedFieldMixin, forms.DateTimeField):
    format_key = "DATETIME_INPUT_FORMATS"
    widget = TypedDateTimeInput
    default_error_messages = {"invalid": _("Write the date and time as %(pattern)s, for example %(example)s.")}
