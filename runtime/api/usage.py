"""REST endpoint for model usage and its cost (issue 20), admin keys only (T3): turns, model
requests and tokens over a period, per day or per channel, with the cost when the tenant set its
prices per million tokens. Computed in the key's tenant schema (T1)."""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from asixto.api import PeriodSerializer
from runtime.usage import GROUPS, Prices, usage_figures


class UsageQuerySerializer(PeriodSerializer):
    group = serializers.ChoiceField(choices=GROUPS, default="day", help_text=_("Rows per day (UTC) or per channel."))


class FiguresSerializer(serializers.Serializer):
    turns = serializers.IntegerField()
    model_requests = serializers.IntegerField(help_text=_("Model calls stored with the turns: loop, routing and reply."))
    failed_requests = serializers.IntegerField(
        help_text=_("Of the model requests, those the model server failed (error, timeout): no tokens counted."))
    requests_without_usage = serializers.IntegerField(help_text=_("Model answers that reported no token counts."))
    tokens_in = serializers.IntegerField(allow_null=True, help_text=_("Prompt tokens; null when none were reported."))
    tokens_out = serializers.IntegerField(allow_null=True, help_text=_("Completion tokens; null when none were reported."))
    cost = serializers.DecimalField(max_digits=24, decimal_places=6, allow_null=True,
                                    help_text=_("From the tenant's prices per million tokens; null when none is set."))


class UsageRowSerializer(FiguresSerializer):
    day = serializers.DateField(allow_null=True, help_text=_("With group=day."))
    channel_kind = serializers.CharField(allow_null=True, help_text=_("With group=channel."))
    channel_name = serializers.CharField(allow_null=True, help_text=_("With group=channel."))


class UsageSerializer(serializers.Serializer):
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    group = serializers.CharField()
    price_in_per_million = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    price_out_per_million = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    totals = FiguresSerializer()
    rows = UsageRowSerializer(many=True)


def usage_data(usage) -> dict:
    """The API's (and the overview's) plain shape of runtime.usage.Usage."""
    rows = []
    for key, figures in usage.rows:
        where = {"day": key, "channel_kind": None, "channel_name": None} if usage.group == "day" else {
            "day": None, "channel_kind": key[0], "channel_name": key[1]}
        rows.append({**where, **vars(figures)})
    return {"since": usage.since, "until": usage.until, "group": usage.group,
            "price_in_per_million": usage.prices.tokens_in, "price_out_per_million": usage.prices.tokens_out,
            "totals": vars(usage.totals), "rows": rows}


class UsageView(APIView):
    @extend_schema(parameters=[UsageQuerySerializer], responses=UsageSerializer,
                   description="Turns posted in [since, until), their model requests and tokens, and the cost.")
    def get(self, request):
        params = UsageQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        usage = usage_figures(**params.validated_data, prices=Prices.of(request.tenant))
        return Response(UsageSerializer(usage_data(usage)).data)
