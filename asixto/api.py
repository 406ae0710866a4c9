"""API building blocks shared by every app: the JSON body parser, serializers that take exactly
what the OpenAPI schema documents (unknown fields, other JSON types, empty filters refused: A4,
issue 19) and the strict pagination."""

import re
from datetime import timedelta
from functools import cache

from django.http import QueryDict
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


@cache
def _serializer_once(serializer_class):
    return serializer_class()


def representation(serializer_class, instance) -> dict:
    """What `serializer_class(instance).data` holds, by the one serializer of that class this process
    keeps (P4): a new DRF serializer copies and binds every declared field (a model serializer builds
    them from the model first), which cost more than the representation itself on the channel API's
    posts. For output serializers whose fields read nothing but the instance (no context, no request)."""
    return _serializer_once(serializer_class).to_representation(instance)


def json_value_problem(field, value):
    """Why a JSON value is not what the OpenAPI schema documents for `field`, or None. DRF
    coerces on its own (`0` for a string, `0` or `"yes"` for a boolean, `1` for a UUID) and
    measures a text after trimming its spaces: a JSON body gets exactly the documented types,
    and `maxLength` counts what was sent (issue 19)."""
    if value is None:
        return None  # allow_null is the field's own rule
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else _("Must be true or false.")
    if isinstance(field, serializers.IntegerField):
        return None if isinstance(value, int) and not isinstance(value, bool) else _("Must be a whole number.")
    if isinstance(field, serializers.FloatField):
        return None if isinstance(value, int | float) and not isinstance(value, bool) else _("Must be a number.")
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        return next(filter(None, (json_value_problem(field.child, item) for item in value)), None)
    if isinstance(field, serializers.MultipleChoiceField):
        return None
    text = isinstance(field, _TEXT_FIELDS) or (
        isinstance(field, serializers.ChoiceField) and all(isinstance(choice, str) for choice in field.choices))
    if text and not isinstance(value, str):
        return _("Must be a string.")
    if isinstance(field, serializers.CharField) and field.max_length is not None and len(value) > field.max_length:
        return _("At most %(max)d characters.") % {"max": field.max_length}
    return None


# Fields the schema documents as JSON strings (a decimal is one too: COERCE_DECIMAL_TO_STRING).
_TEXT_FIELDS = (serializers.CharField, serializers.UUIDField, serializers.DateTimeField, serializers.DateField,
                serializers.TimeField, serializers.DurationField, serializers.DecimalField)


class StrictMixin:
    """Unknown keys in a payload are an error, not silently ignored: a typo must not look saved.
    In a JSON body each value must be what the schema documents (json_value_problem)."""

    def to_internal_value(self, data):
        errors = {}
        if isinstance(data, dict):
            for name in data:
                field = self.fields.get(name)
                if field is None:
                    errors[name] = [_("Unknown field.")]
                elif field.read_only:
                    errors[name] = [_("This field is read only.")]
                elif not isinstance(data, QueryDict) and (problem := json_value_problem(field, data[name])):
                    errors[name] = [problem]
        return validated_with(super().to_internal_value, data, errors)


def validated_with(to_internal_value, data, problems):
    """DRF's validation of `data`, reporting `problems` (field → messages) found before it too:
    every problem at once, the unknown keys and the invalid values."""
    try:
        value = to_internal_value(data)
    except serializers.ValidationError as exc:
        if isinstance(exc.detail, dict):
            exc.detail.update(problems)
        raise
    if problems:
        raise serializers.ValidationError(problems)
    return value


class StrictSerializer(StrictMixin, serializers.Serializer):
    pass


class StrictModelSerializer(StrictMixin, serializers.ModelSerializer):
    pass


class QueryMixin:
    """Query parameters: one sent empty (`?state=`) is invalid unless its field allows blank. DRF
    reads an empty value as an HTML form means it, as not sent: `?until=` would silently list
    everything, where the schema documents a date (issue 19)."""

    def to_internal_value(self, data):
        empty = {}
        if isinstance(data, QueryDict):
            empty = {name: [_("Empty: leave the parameter out not to filter by it.")]
                     for name, field in self.fields.items()
                     if data.get(name) == "" and not getattr(field, "allow_blank", False)}
        return validated_with(super().to_internal_value, data, empty)


class QuerySerializer(QueryMixin, serializers.Serializer):
    """The filters of a list, read from its query parameters (the pagination's pass through)."""


class PeriodSerializer(QueryMixin, StrictSerializer):
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
    """Every list: `?limit=` and `?offset=`, 50 by default, never more than `max_limit` (A1, A4).
    A value that is not a whole number in range is a 400, not silently the default: a client
    paging with a broken offset must not be shown the first page again (issue 19)."""

    max_limit = 200

    def get_limit(self, request):
        limit = self._whole_number(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request):
        offset = self._whole_number(request, self.offset_query_param, minimum=0)
        return 0 if offset is None else offset

    @staticmethod
    def _whole_number(request, name, *, minimum):
        if name not in request.query_params:
            return None
        raw = request.query_params[name]
        if not _WHOLE_NUMBER.fullmatch(raw) or int(raw) < minimum:
            raise serializers.ValidationError(
                {name: [_("Must be a whole number, at least %(minimum)d.") % {"minimum": minimum}]})
        return int(raw)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            minimum = 1 if parameter["name"] == self.limit_query_param else 0
            parameter["schema"] = {"type": "integer", "minimum": minimum}
        return parameters


_WHOLE_NUMBER = re.compile(r"[0-9]{1,100}")


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
