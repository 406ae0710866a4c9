from django.urls import path

from runtime.api import model_test, scheduled, skills, usage, views, webhooks

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
    path("reminders", scheduled.ReminderList.as_view(), name="reminder-list"),
    path("reminders/<uuid:pk>", scheduled.ReminderDetail.as_view(), name="reminder-detail"),
    path("reminders/<uuid:pk>/cancel", scheduled.ReminderCancel.as_view(), name="reminder-cancel"),
    path("follow-ups", scheduled.FollowUpList.as_view(), name="follow-up-list"),
    path("follow-ups/<uuid:pk>", scheduled.FollowUpDetail.as_view(), name="follow-up-detail"),
    path("follow-ups/<uuid:pk>/cancel", scheduled.FollowUpCancel.as_view(), name="follow-up-cancel"),
    path("skills", skills.SkillListCreateView.as_view(), name="skill-list"),
    path("skills/<uuid:pk>", skills.SkillDetailView.as_view(), name="skill-detail"),
    path("usage", usage.UsageView.as_view(), name="usage"),
    path("tenant/model-test", model_test.ModelTestView.as_view(), name="tenant-model-test"),
]
