"""API building blocks shared by every app: serializers that reject unknown fields (A4)."""

from django.utils.translation import gettext as _
from rest_framework import serializers


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
