"""REST endpoint for the model endpoint's connection test (issue 20), admin keys only (T3):
`POST /api/v1/tenant/model-test` sends one small request to the tenant's configured model and
answers ok or the failure's code and message, with the time it took. Never the key (T7)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from asixto.web_calls import BUSY, web_call_slot
from runtime.model_test import model_connection_test


class ModelTestSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    code = serializers.CharField(help_text="`ok`, or `model_not_configured`, `model_refused`, `model_unreachable`, "
                                           "`model_timeout`, `model_http_error`, `model_bad_response`, `model_empty`.")
    message = serializers.CharField(help_text="What happened, in the request's language.")
    detail = serializers.CharField(allow_blank=True, help_text="The technical detail (English); empty when ok.")
    duration_ms = serializers.FloatField()
    model = serializers.CharField(allow_blank=True)
    status = serializers.IntegerField(allow_null=True, help_text="The endpoint's HTTP status, on an HTTP error.")
    tokens_in = serializers.IntegerField(allow_null=True)
    tokens_out = serializers.IntegerField(allow_null=True)


class ModelTestView(APIView):
    @extend_schema(request=None, responses={200: ModelTestSerializer, 429: BUSY},
                   description="One small request to the configured model endpoint: ok, or the failure's code and message.")
    def post(self, request):
        with web_call_slot():  # 429 when the tenant's calls out from the web tier are at their limit
            return Response(ModelTestSerializer(model_connection_test(tenant=request.tenant)).data)
