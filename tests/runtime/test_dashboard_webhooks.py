"""Webhooks in the dashboard (A2, M2, T1, T4, T7): admins create one per API key and see its
secret once, rotate it, change the URL under the outbound rules, switch it off, remove it and
read every delivery attempt; support staff get 403; another tenant's webhook is a 404."""

from django.db import connection
from django.test import override_settings

from runtime.models import ChannelWebhook, WebhookDelivery
from tenants.models import ApiKey
from tests.runtime.runtime_support import post


def channel_key(world):
    return ApiKey.objects.get(prefix=ApiKey.parse_prefix(world.channel_key))


def create(world, url="https://93.184.216.34/hook"):
    response = world.dashboard("ana").post("/webhooks/", {"api_key": str(channel_key(world).pk), "url": url})
    assert response.status_code == 200
    return response


def test_an_admin_creates_a_webhook_and_sees_the_secret_once(alpha):
    """T7, A2: the creation page shows the secret; no later page does; rotating shows a new one once."""
    response = create(alpha)
    secret = response.context["secret"]
    assert secret.startswith("whsec_") and secret in response.content.decode()
    with alpha.schema():
        webhook = ChannelWebhook.objects.get()
    assert webhook.api_key_id == channel_key(alpha).pk and webhook.secret == secret
    client = alpha.dashboard("ana")
    later = client.get("/webhooks/").content.decode()
    assert secret not in later and "https://93.184.216.34/hook" in later and f"asx_{webhook.api_key_prefix}_" in later
    rotated = client.post(f"/webhooks/{webhook.pk}/secret/")
    new = rotated.context["secret"]
    assert rotated.status_code == 200 and new != secret and new in rotated.content.decode()
    assert new not in client.get("/webhooks/").content.decode()
    with alpha.schema():
        assert ChannelWebhook.objects.get().secret == new


def test_an_admin_changes_switches_off_and_removes_it(alpha, settings):
    """M2, A4: a private URL is refused with a message and the old URL stays; a good one is
    saved; the switch and the removal work."""
    create(alpha)
    with alpha.schema():
        webhook = ChannelWebhook.objects.get()
    client = alpha.dashboard("ana")
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    refused = client.post(f"/webhooks/{webhook.pk}/", {"url": "https://10.1.2.3/hook"}, follow=True)
    assert refused.status_code == 200 and "10.1.2.3" in refused.content.decode()  # the reason, shown
    assert client.post(f"/webhooks/{webhook.pk}/", {"url": "not a url"}).status_code == 302
    with alpha.schema():
        assert ChannelWebhook.objects.get().url == "https://93.184.216.34/hook"
    assert client.post(f"/webhooks/{webhook.pk}/", {"url": "https://93.184.216.35/new"}).status_code == 302
    assert client.post(f"/webhooks/{webhook.pk}/", {"toggle": "1"}).status_code == 302
    with alpha.schema():
        changed = ChannelWebhook.objects.get()
    assert (changed.url, changed.enabled) == ("https://93.184.216.35/new", False)
    assert client.post(f"/webhooks/{webhook.pk}/delete/").status_code == 302
    with alpha.schema():
        assert not ChannelWebhook.objects.exists()


def test_bad_webhooks_are_refused_with_a_clear_error(alpha, beta):
    """A4, M2: a private URL, a key of another tenant, a key that already has a webhook."""
    with override_settings(ASIXTO_ALLOW_PRIVATE_HOSTS=False):
        refused = alpha.dashboard("ana").post("/webhooks/", {"api_key": str(channel_key(alpha).pk), "url": "https://127.0.0.1/x"})
    assert refused.status_code == 200 and "url" in refused.context["form"].errors and refused.context["secret"] is None
    for key in (str(channel_key(beta).pk), "not-a-key"):
        other = alpha.dashboard("ana").post("/webhooks/", {"api_key": key, "url": "https://93.184.216.34/x"})
        assert other.status_code == 200 and "api_key" in other.context["form"].errors
    with alpha.schema():
        assert not ChannelWebhook.objects.exists()
    create(alpha)
    twice = alpha.dashboard("ana").post("/webhooks/", {"api_key": str(channel_key(alpha).pk), "url": "https://93.184.216.34/y"})
    assert "api_key" in twice.context["form"].errors
    with alpha.schema():
        assert ChannelWebhook.objects.count() == 1


def test_it_lists_delivery_attempts_with_links_to_their_turns(alpha):
    """A2: every attempt, with outcome, status, error and the conversation of its turn."""
    create(alpha)
    turn = post(alpha, "Hola")
    with alpha.schema():
        webhook = ChannelWebhook.objects.get()
        WebhookDelivery.objects.create(webhook=webhook, turn=turn, delivery_id="0b3c6a8e-8d8e-4c55-9d84-1d2d2f0b6c11",
                                       attempt=1, url=webhook.url, outcome="retrying", status_code=503,
                                       error_code="http_status", error_params={"status": 503})
    html = alpha.dashboard("ana").get("/webhooks/").content.decode()
    assert "HTTP 503" in html and f"/conversations/{turn.conversation_id}/#turn-{turn.pk}" in html
    conversation = alpha.dashboard("sam").get(f"/conversations/{turn.conversation_id}/").content.decode()
    assert "HTTP 503" in conversation  # support staff see the attempts on the conversation page


def test_support_staff_cannot_touch_webhooks(alpha):
    """T4: 403 on every webhook page and action; nothing changes."""
    create(alpha)
    with alpha.schema():
        webhook = ChannelWebhook.objects.get()
    support = alpha.dashboard("sam")
    assert support.get("/webhooks/").status_code == 403
    for url, data in (("/webhooks/", {"api_key": str(channel_key(alpha).pk), "url": "https://93.184.216.34/z"}),
                      (f"/webhooks/{webhook.pk}/", {"toggle": "1"}), (f"/webhooks/{webhook.pk}/secret/", {}),
                      (f"/webhooks/{webhook.pk}/delete/", {})):
        assert support.post(url, data).status_code == 403, url
    with alpha.schema():
        assert ChannelWebhook.objects.get().enabled and ChannelWebhook.objects.get().secret == webhook.secret


def test_another_tenants_webhook_is_not_found(alpha, beta):
    """T1: B's webhook is a 404 for A's admin, and B's secret does not change."""
    create(beta)
    with beta.schema():
        theirs = ChannelWebhook.objects.get()
    connection.set_schema_to_public()
    client = alpha.dashboard("ana")
    for url in (f"/webhooks/{theirs.pk}/", f"/webhooks/{theirs.pk}/secret/", f"/webhooks/{theirs.pk}/delete/"):
        assert client.post(url, {"toggle": "1"}).status_code == 404, url
    assert "93.184.216.34" not in client.get("/webhooks/").content.decode()
    with beta.schema():
        assert ChannelWebhook.objects.get().secret == theirs.secret and ChannelWebhook.objects.get().enabled
