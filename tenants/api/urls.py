from django.urls import path

from tenants.api import views

urlpatterns = [
    path("tenant", views.TenantSettingsView.as_view(), name="tenant-settings"),
    path("api-keys", views.ApiKeyListCreateView.as_view(), name="api-key-list"),
    path("api-keys/<uuid:pk>", views.ApiKeyDetailView.as_view(), name="api-key-detail"),
    path("api-keys/<uuid:pk>/rotate", views.ApiKeyRotateView.as_view(), name="api-key-rotate"),
    path("operator/tenants", views.OperatorTenantListCreateView.as_view(), name="operator-tenant-list"),
    path("operator/tenants/<int:pk>", views.OperatorTenantDetailView.as_view(), name="operator-tenant-detail"),
    path("operator/stdio-commands", views.OperatorCommandListCreateView.as_view(), name="operator-command-list"),
    path("operator/stdio-commands/<slug:slug>", views.OperatorCommandDetailView.as_view(), name="operator-command-detail"),
    path("health", views.HealthView.as_view(), name="health"),
]
