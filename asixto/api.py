"""API building blocks shared by every app: the JSON body parser and serializers that reject
unknown fields (A4)."""

import re
from datetime import timedelta

from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import JSONParser
from rest_framework.settings import api_settings

from asixto.json_input import MAX_DEPTH, JsonInputError, JsonTooDeep, check_json


class JsonBodyParser(JSONParser):
    """DRF's JSON parser, plus the bounds of asixto.json_input: a body nested too deep is a
    parse error, text PostgreSQL cannot store a field error, never a 500 later on."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError(_("JSON nested deeper than %(depth)d levels.") % {"depth": MAX_DEPTH}) from exc
        try:
            check_json(data)
        except JsonTooDeep as exc:
            raise ParseError(str(exc)) from exc
        except JsonInputError as exc:  # text PostgreSQL cannot keep, a number that is not finite (1e999)
            raise serializers.ValidationError({exc.field or api_settings.NON_FIELD_ERRORS_KEY: [str(exc)]}) from exc
        return data


class StrictMixin:
    """Unknown keys in a payload are an error, not silently ignored: a typo must not look saved."""

    def to_internal_value(self, data):
        errors = {}
        if isinstance(data, dict):
            for name in data:
                field = self.fields.get(name)
                if field is None:
                    errors[name] = [_("Unknown field.")]
                elif field.read_only:
                    errors[name] = [_("This field is read only.")]
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            # Report every problem at once: the unknown keys and the invalid values.
            if isinstance(exc.detail, dict):
                exc.detail.update(errors)
            raise
        if errors:
            raise serializers.ValidationError(errors)
        return value


class StrictSerializer(StrictMixin, serializers.Serializer):
    pass


class StrictModelSerializer(StrictMixin, serializers.ModelSerializer):
    pass


class PeriodSerializer(StrictSerializer):
    """Query parameters of a figure over a period: `since` (default: `until` minus 30 days) and
    `until` (default: now), at most MAX_PERIOD_DAYS apart; a reversed or longer period is a 400."""

    DEFAULT_DAYS = 30
    MAX_PERIOD_DAYS = 400

    since = serializers.DateTimeField(required=False, help_text="Start (inclusive). Default: `until` minus 30 days.")
    until = serializers.DateTimeField(required=False, help_text="End (exclusive). Default: now.")

    def validate(self, attrs):
        until = attrs.get("until") or timezone.now()
        since = attrs.get("since") or until - timedelta(days=self.DEFAULT_DAYS)
        if since >= until:
            raise serializers.ValidationError({"since": [_("Must be before until.")]})
        if until - since > timedelta(days=self.MAX_PERIOD_DAYS):
            raise serializers.ValidationError({"since": [_("The period may be at most %(days)d days.") % {"days": self.MAX_PERIOD_DAYS}]})
        return {**attrs, "since": since, "until": until}


class ListPagination(LimitOffsetPagination):
    """Every list: `?limit=` and `?offset=`, 50 by default, never more than `max_limit` (A1, A4)."""

    max_limit = 200


def schema_doc_excludes():
    """Classes whose docstrings the OpenAPI schema must not repeat on every serializer and view
    (drf-spectacular's GET_LIB_DOC_EXCLUDES): DRF's own, and the strict mixin's note for developers."""
    from drf_spectacular.plumbing import get_lib_doc_excludes

    return [*get_lib_doc_excludes(), StrictMixin]


# The SPEC's requirement ids, as docstrings carry them for developers: " (T6, T7)", " (M3, issue 8)",
# "Call records (G9), newest first".
_ID = r"(?:[A-Z]{1,2}\d{1,2}(?:[–-][A-Z]{0,2}\d{1,2})?|issue \d+)"
_REQUIREMENT_IDS = re.compile(rf"\s*\((?:{_ID}(?:[,;]\s*)?)+\)")
# Ids closing a parenthesis that says something else too: "(`examples`, issue 18)".
_TRAILING_IDS = re.compile(rf"(?:[,;]\s*{_ID})+(?=\))")


def without_requirement_ids(result, generator, request, public):
    """drf-spectacular postprocessing hook: the API docs are for integrators, so descriptions and
    summaries lose the requirement ids the docstrings they come from carry (issue 20)."""

    def clean(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("description", "summary") and isinstance(value, str):
                    node[key] = _TRAILING_IDS.sub("", _REQUIREMENT_IDS.sub("", value))
                else:
                    clean(value)
        elif isinstance(node, list):
            for value in node:
                clean(value)

    clean(result)
    return result
