"""REST endpoints of the tools app (A1, A2): servers, tools, findings, catalog versions."""

import uuid

from django.db import transaction
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from asixto.api import PeriodSerializer
from asixto.web_calls import BUSY, web_call_slot
from asixto.errors import ApplicationError
from tools import mcp, overlays, routing_examples, selectors, services
from tools.api import serializers as s
from tools.gateway import CallContext, call_tool
from tools.gateway.call import find_tool
from tools.models import ToolCall
from tools.offerings import server_offerings
from tools.server_quota import server_register
from tools.stats import ToolStats, tool_stats


class ServerListCreateView(generics.ListAPIView):
    serializer_class = s.ServerSerializer

    def get_queryset(self):
        return selectors.servers()

    @extend_schema(request=s.ServerSerializer, responses={
        201: s.ServerSerializer, 409: OpenApiResponse(description="The account's server quota is reached (`server_quota_exceeded`).")})
    def post(self, request):
        data = s.ServerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        server = server_register(data=data.validated_data)
        return Response(s.ServerSerializer(server).data, status=status.HTTP_201_CREATED)


class ServerDetailView(APIView):
    @extend_schema(responses=s.ServerSerializer)
    def get(self, request, pk):
        return Response(s.ServerSerializer(get_object_or_404(selectors.servers(), pk=pk)).data)

    @extend_schema(request=s.ServerUpdateSerializer, responses=s.ServerSerializer)
    def patch(self, request, pk):
        server = get_object_or_404(selectors.servers(), pk=pk)
        data = s.ServerUpdateSerializer(server, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        server = services.server_update(server=server, data=data.validated_data)
        return Response(s.ServerSerializer(server).data)

    @extend_schema(responses={204: None}, description="Remove the server and its catalog.")
    def delete(self, request, pk):
        get_object_or_404(selectors.servers(), pk=pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class ServerSyncView(APIView):
    @extend_schema(request=None, responses={202: s.ServerSerializer})
    def post(self, request, pk):
        server = get_object_or_404(selectors.servers(), pk=pk)
        services.server_queue_sync(server=server)
        return Response(s.ServerSerializer(server).data, status=status.HTTP_202_ACCEPTED)


class _ServerOfferingsView(APIView):
    """What the server lists now besides tools (issue 20), read-only. A server failure is a 502
    whose code is the connection layer's (`connect_refused`, `timeout`, `http_status`, …)."""

    kind = ""

    def get(self, request, pk):
        server = get_object_or_404(selectors.servers(), pk=pk)
        try:
            with web_call_slot():
                offered = server_offerings(server=server, kind=self.kind)
        except mcp.McpError as exc:
            raise ApplicationError(exc.message, code=exc.code, status_code=status.HTTP_502_BAD_GATEWAY) from exc
        return Response({"server": server.pk, self.kind: offered.items, "truncated": offered.truncated})


SERVER_FAILED = OpenApiResponse(description="The MCP server failed to answer; the code is the connection layer's.")


class ServerResourcesView(_ServerOfferingsView):
    kind = "resources"

    @extend_schema(responses={200: s.ServerResourcesSerializer, 502: SERVER_FAILED, 429: BUSY}, description="The server's resources/list, read now.")
    def get(self, request, pk):
        return super().get(request, pk)


class ServerPromptsView(_ServerOfferingsView):
    kind = "prompts"

    @extend_schema(responses={200: s.ServerPromptsSerializer, 502: SERVER_FAILED, 429: BUSY}, description="The server's prompts/list, read now.")
    def get(self, request, pk):
        return super().get(request, pk)


class CatalogVersionListView(generics.ListAPIView):
    serializer_class = s.CatalogVersionSerializer

    def get_queryset(self):
        server = get_object_or_404(selectors.servers(), pk=self.kwargs["pk"])
        return selectors.catalog_versions(server=server)


class CatalogVersionDetailView(generics.RetrieveAPIView):
    serializer_class = s.CatalogVersionSerializer

    def get_queryset(self):
        return selectors.catalog_versions()


@extend_schema_view(get=extend_schema(parameters=[s.ToolFilterSerializer]))
class ToolListView(generics.ListAPIView):
    serializer_class = s.ToolSerializer

    def get_queryset(self):
        params = s.ToolFilterSerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return selectors.tools(**params.validated_data)


class ToolDetailView(APIView):
    @extend_schema(responses=s.ToolDetailSerializer)
    def get(self, request, pk):
        return Response(s.ToolDetailSerializer(get_object_or_404(selectors.tools(), pk=pk)).data)

    @extend_schema(request=s.ToolUpdateSerializer, responses=s.ToolDetailSerializer)
    def patch(self, request, pk):
        tool = get_object_or_404(selectors.tools(), pk=pk)
        data = s.ToolUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if "enabled" in data.validated_data:
            services.tool_set_enabled(tool=tool, enabled=data.validated_data["enabled"])
        if "sample_arguments" in data.validated_data:
            services.tool_set_sample_arguments(tool=tool, sample_arguments=data.validated_data["sample_arguments"])
        return Response(s.ToolDetailSerializer(get_object_or_404(selectors.tools(), pk=pk)).data)


class ToolStatsView(APIView):
    """Per-tool figures (issue 20): calls, failures, failure rate, p50/p95 latency, last failure."""

    @extend_schema(parameters=[PeriodSerializer], responses=s.ToolStatsSerializer,
                   description="Figures of the tool's calls started in [since, until) (default: the last 30 days).")
    def get(self, request, pk):
        tool = get_object_or_404(selectors.tools(include_removed=True), pk=pk)
        params = PeriodSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        period = params.validated_data
        stats = tool_stats(tool_ids=[tool.pk], **period).get(tool.pk, ToolStats())
        return Response(s.ToolStatsSerializer({
            "tool": tool.pk, **period, "calls": stats.calls, "failures": stats.failures, "failure_rate": stats.failure_rate,
            "p50_ms": stats.p50_ms, "p95_ms": stats.p95_ms, "last_failure_at": stats.last_failure_at,
        }).data)


class ToolProbeView(APIView):
    @extend_schema(request=None, responses=s.ToolDetailSerializer, description="Run the live probes (C8, C9) now.")
    def post(self, request, pk):
        tool = get_object_or_404(selectors.tools(), pk=pk)
        services.tool_probe(tool=tool)
        return Response(s.ToolDetailSerializer(get_object_or_404(selectors.tools(), pk=pk)).data)


class ToolInvokeView(APIView):
    """The test console (A1): one call through the gateway, exactly as a turn would make it."""

    @extend_schema(request=s.InvokeSerializer, responses={200: s.CallOutcomeSerializer, 429: BUSY})
    def post(self, request, pk):
        # The live tool as the gateway itself finds it (its per-process lookup cache, P1): the
        # selector's findings are not needed here.
        if find_tool(tool_id=pk) is None:
            raise Http404
        data = s.InvokeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        arguments = values.pop("arguments")
        values.setdefault("idempotency_key", f"console-{uuid.uuid4().hex}")
        # A console call's record is stored when call_tool returns: the answer links to it.
        with web_call_slot():
            outcome = call_tool(tool_id=pk, arguments=arguments, context=CallContext(source=ToolCall.Source.CONSOLE, **values))
        return Response(s.CallOutcomeSerializer(outcome).data)


@extend_schema_view(get=extend_schema(parameters=[s.ToolCallFilterSerializer]))
class ToolCallListView(generics.ListAPIView):
    """Call records (G9), newest first; filter by tool, outcome, turn, or violations only."""

    serializer_class = s.ToolCallSerializer

    def get_queryset(self):
        params = s.ToolCallFilterSerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return selectors.tool_calls(**params.validated_data)


class ToolCallDetailView(generics.RetrieveAPIView):
    serializer_class = s.ToolCallSerializer

    def get_queryset(self):
        return selectors.tool_calls()


class ToolOverlayView(APIView):
    """The admin's contract overlay of one tool (issue 8): verb, capabilities, model-facing
    description, level, and the sample requests routing learns from (`examples`, issue 18). Never
    sent to the server; the tool is certified again on its effective definition."""

    @extend_schema(request=s.OverlaySerializer, responses=s.ToolDetailSerializer)
    def patch(self, request, pk):
        tool = get_object_or_404(selectors.tools(), pk=pk)
        data = s.OverlaySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        examples = changes.pop("examples", None)
        with transaction.atomic():
            if changes or examples is None:
                overlays.tool_set_overlay(tool=tool, changes=changes, who=str(request.user))
            if examples is not None:
                routing_examples.tool_set_examples(tool=tool, texts=examples, who=str(request.user))
        return Response(s.ToolDetailSerializer(get_object_or_404(selectors.tools(), pk=pk)).data)


class ServerAcceptSuggestionsView(APIView):
    """Accept the suggested verb and capabilities of every tool of a server (or of `tools`). A tool
    that accepting would block keeps its suggestions unless it is listed in `confirm`."""

    @extend_schema(request=s.AcceptSuggestionsSerializer, responses=s.ToolSerializer(many=True))
    def post(self, request, pk):
        server = get_object_or_404(selectors.servers(), pk=pk)
        data = s.AcceptSuggestionsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        overlays.server_accept_suggestions(server=server, who=str(request.user), tool_ids=data.validated_data.get("tools"),
                                           confirmed=data.validated_data.get("confirm") or ())
        return Response(s.ToolSerializer(selectors.tools(server_slug=server.slug), many=True).data)
