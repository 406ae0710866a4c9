"""Passwords (T4): everyone changes their own; a forgotten one is replaced from an e-mailed link
that works on the tenant's own domain, once."""

import re

from accounts.models import User
from tests.conftest import PASSWORD

NEW_PASSWORD = "another-long-password-7"


def test_it_lets_support_staff_change_their_own_password(alpha):
    """T4: the old password stops working, the new one works, the session stays signed in."""
    sam = alpha.dashboard("sam")
    assert sam.get("/account/password/").status_code == 200
    response = sam.post("/account/password/", {
        "old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD,
    })
    assert response.status_code == 302
    assert sam.get("/calls/").status_code == 200, "the person who changed it stays signed in"
    assert alpha.dashboard().post("/login/", {"username": "sam", "password": PASSWORD}).status_code == 200
    assert alpha.dashboard().post("/login/", {"username": "sam", "password": NEW_PASSWORD}).status_code == 302


def test_it_refuses_a_wrong_current_password_or_a_mismatch(alpha):
    """A4: the form says what is wrong; the password stays."""
    sam = alpha.dashboard("sam")
    wrong = sam.post("/account/password/", {"old_password": "nope", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert wrong.status_code == 200 and "old_password" in wrong.context["form"].errors
    mismatch = sam.post("/account/password/", {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": "x"})
    assert mismatch.status_code == 200 and "new_password2" in mismatch.context["form"].errors
    assert alpha.dashboard().post("/login/", {"username": "sam", "password": PASSWORD}).status_code == 302


def test_it_needs_a_signed_in_user_to_change_a_password(alpha):
    """T4: anonymous visitors are sent to sign in."""
    response = alpha.dashboard().get("/account/password/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_mails_a_reset_link_that_works_once_and_says_the_same_for_unknown_addresses(alpha, mailoutbox):
    """T4: a forgotten password is reset from a link; an unknown address gets the same answer and no mail."""
    with alpha.schema():
        User.objects.filter(username="sam").update(email="sam@example.com")
    unknown = alpha.dashboard().post("/password/forgot/", {"email": "nobody@example.com"}, follow=True)
    assert len(mailoutbox) == 0
    known = alpha.dashboard().post("/password/forgot/", {"email": "SAM@example.com"}, follow=True)
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["sam@example.com"]
    assert [str(m) for m in unknown.context["messages"]] == [str(m) for m in known.context["messages"]]
    path = re.search(r"https?://\S+", mailoutbox[0].body).group(0).split(alpha.domain, 1)[1]
    client = alpha.dashboard()
    page = client.get(path, follow=True)
    assert page.context["validlink"]
    client.post(page.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert alpha.dashboard().post("/login/", {"username": "sam", "password": NEW_PASSWORD}).status_code == 302
    assert not alpha.dashboard().get(path, follow=True).context["validlink"]


def test_it_does_not_accept_one_tenants_reset_link_on_another(alpha, beta, mailoutbox):
    """T1: a link from alpha's e-mail, opened on beta's domain, sets nothing there."""
    with alpha.schema():
        User.objects.filter(username="sam").update(email="sam@example.com")
    alpha.dashboard().post("/password/forgot/", {"email": "sam@example.com"})
    path = re.search(r"https?://\S+", mailoutbox[0].body).group(0).split(alpha.domain, 1)[1]
    page = beta.dashboard().get(path, follow=True)
    assert not page.context["validlink"]


def test_it_sends_nothing_to_a_deactivated_person(alpha, mailoutbox):
    """T4: a deactivated person cannot get back in through a reset."""
    with alpha.schema():
        User.objects.filter(username="sam").update(email="sam@example.com", is_active=False)
    alpha.dashboard().post("/password/forgot/", {"email": "sam@example.com"})
    assert mailoutbox == []


def test_a_mail_server_that_refuses_is_reported_and_keeps_the_person(alpha, settings):
    """A4, T4: with SMTP configured and the server down, sending a link says so (no 500); the
    person stays; the API answers 503 mail_failed."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 5
    with alpha.schema():
        User.objects.filter(username="sam").update(email="sam@example.com")
        sam_id = User.objects.get(username="sam").pk
    page = alpha.dashboard("ana").post(f"/people/{sam_id}/password-link/", follow=True, HTTP_ACCEPT_LANGUAGE="en")
    assert page.status_code == 200 and "could not be sent" in page.content.decode()
    response = alpha.api().post(f"/api/v1/users/{sam_id}/password-link")
    assert response.status_code == 503 and response.json()["error"]["code"] == "mail_failed"
    with alpha.schema():
        assert User.objects.filter(pk=sam_id, is_active=True).exists()


def test_the_forgot_form_sends_a_few_links_per_address_and_hour(alpha, mailoutbox):
    """T4, A4: the form cannot flood an inbox: past three links an hour, the same answer, no mail."""
    with alpha.schema():
        User.objects.filter(username="sam").update(email="sam@example.com")
    answers = [alpha.dashboard().post("/password/forgot/", {"email": "Sam@Example.com"}, follow=True) for _ in range(5)]
    assert len(mailoutbox) == 3
    assert len({str(list(page.context["messages"])[0]) for page in answers}) == 1
