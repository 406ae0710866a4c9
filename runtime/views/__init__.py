"""Dashboard pages of the runtime (A2): conversations and their turns, the truncation report,
the playground, webhooks, and skills. Support staff read; only admins change anything or talk to the agent (T4)."""

from django.urls import path

from runtime.views import conversations, model_test, overview, playground, skills, truncations, webhooks

urlpatterns = [
    path("", overview.home, name="home"),
    path("conversations/", conversations.conversations_page, name="conversations"),
    path("conversations/<uuid:pk>/", conversations.conversation_page, name="conversation"),
    path("conversations/<uuid:pk>/turns/<uuid:turn>/routing/", conversations.routing_correct, name="routing_correct"),
    path("conversations/<uuid:pk>/<str:kind>/<uuid:item>/cancel/", conversations.scheduled_cancel, name="scheduled_cancel"),
    path("truncations/", truncations.truncations_page, name="truncations"),
    path("playground/", playground.playground_page, name="playground"),
    path("playground/messages/", playground.playground_post, name="playground_post"),
    path("turns/<uuid:pk>/events/", playground.turn_events, name="turn_events"),
    path("turns/<uuid:pk>/calls/", playground.turn_calls, name="turn_calls"),
    path("webhooks/", webhooks.webhooks_page, name="webhooks"),
    path("webhooks/<uuid:pk>/", webhooks.webhook_change, name="webhook_change"),
    path("webhooks/<uuid:pk>/secret/", webhooks.webhook_rotate, name="webhook_rotate"),
    path("webhooks/<uuid:pk>/delete/", webhooks.webhook_delete, name="webhook_delete"),
    path("skills/", skills.skills_page, name="skills"),
    path("skills/<uuid:pk>/", skills.skill_page, name="skill"),
    path("settings/model-test/", model_test.model_test, name="model_test"),
]
