from django.urls import path

from tools.api import views

urlpatterns = [
    path("servers", views.ServerListCreateView.as_view(), name="server-list"),
    path("servers/<uuid:pk>", views.ServerDetailView.as_view(), name="server-detail"),
    path("servers/<uuid:pk>/sync", views.ServerSyncView.as_view(), name="server-sync"),
    path("servers/<uuid:pk>/accept-suggestions", views.ServerAcceptSuggestionsView.as_view(), name="server-accept-suggestions"),
    path("servers/<uuid:pk>/resources", views.ServerResourcesView.as_view(), name="server-resources"),
    path("servers/<uuid:pk>/prompts", views.ServerPromptsView.as_view(), name="server-prompts"),
    path("servers/<uuid:pk>/versions", views.CatalogVersionListView.as_view(), name="server-versions"),
    path("catalog-versions/<uuid:pk>", views.CatalogVersionDetailView.as_view(), name="catalog-version-detail"),
    path("tools", views.ToolListView.as_view(), name="tool-list"),
    path("tools/<uuid:pk>", views.ToolDetailView.as_view(), name="tool-detail"),
    path("tools/<uuid:pk>/overlay", views.ToolOverlayView.as_view(), name="tool-overlay"),
    path("tools/<uuid:pk>/stats", views.ToolStatsView.as_view(), name="tool-stats"),
    path("tools/<uuid:pk>/probe", views.ToolProbeView.as_view(), name="tool-probe"),
    path("tools/<uuid:pk>/invoke", views.ToolInvokeView.as_view(), name="tool-invoke"),
    path("tool-calls", views.ToolCallListView.as_view(), name="tool-call-list"),
    path("tool-calls/<uuid:pk>", views.ToolCallDetailView.as_view(), name="tool-call-detail"),
]
