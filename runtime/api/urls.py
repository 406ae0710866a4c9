from django.urls import path

from runtime.api import views, webhooks

urlpatterns = [
    path("conversations", views.ConversationListCreateView.as_view(), name="conversation-list"),
    path("conversations/<uuid:pk>", views.ConversationDetailView.as_view(), name="conversation-detail"),
    path("conversations/<uuid:pk>/messages", views.MessageListCreateView.as_view(), name="conversation-messages"),
    path("turns/<uuid:pk>", views.TurnDetailView.as_view(), name="turn-detail"),
    path("turns/<uuid:pk>/events", views.TurnEventsView.as_view(), name="turn-events"),
    path("truncation-logs", views.TruncationLogListView.as_view(), name="truncation-log-list"),
    path("webhooks", webhooks.WebhookListCreateView.as_view(), name="webhook-list"),
    path("webhooks/<uuid:pk>", webhooks.WebhookDetailView.as_view(), name="webhook-detail"),
    path("webhooks/<uuid:pk>/secret", webhooks.WebhookSecretView.as_view(), name="webhook-secret"),
    path("webhooks/<uuid:pk>/deliveries", webhooks.WebhookDeliveryListView.as_view(), name="webhook-deliveries"),
]
