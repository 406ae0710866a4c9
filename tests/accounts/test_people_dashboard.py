"""People in the dashboard (T4): admins add or invite users with a role, change roles and
deactivate; support staff reach none of it; the last active admin stays."""

import re

import pytest

from accounts.models import User
from tests.conftest import PASSWORD

NEW_PASSWORD = "a-long-new-password-42"


def test_it_lets_an_admin_add_a_support_user_who_can_sign_in_and_change_nothing(alpha):
    """T4: an added support user signs in, reads, and gets 403 on every page that changes the tenant."""
    admin = alpha.dashboard("ana")
    response = admin.post("/people/", {"username": "sofia", "email": "", "role": "support", "password": NEW_PASSWORD})
    assert response.status_code == 302, response.content.decode()[:3000]
    with alpha.schema():
        assert User.objects.get(username="sofia").role == User.Role.SUPPORT
    sofia = alpha.dashboard()
    assert sofia.post("/login/", {"username": "sofia", "password": NEW_PASSWORD}).status_code == 302
    assert sofia.get("/").status_code == 200
    assert sofia.get("/calls/").status_code == 200
    for url in ("/settings/", "/api-keys/", "/people/", "/servers/new/"):
        assert sofia.get(url).status_code == 403, url
    assert sofia.post("/people/", {"username": "mallory", "role": "admin", "password": NEW_PASSWORD}).status_code == 403
    with alpha.schema():
        assert not User.objects.filter(username="mallory").exists()


def test_it_invites_by_e_mail_and_the_link_sets_the_password(alpha, mailoutbox, django_capture_on_commit_callbacks):
    """T4: without a password the person gets an e-mail; its link (on the tenant's domain) sets it once."""
    admin = alpha.dashboard("ana")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post("/people/", {"username": "lucia", "email": "lucia@example.com", "role": "admin", "password": ""})
    assert response.status_code == 302
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["lucia@example.com"]
    link = re.search(r"https?://\S+", mailoutbox[0].body).group(0)
    assert link.startswith(f"http://{alpha.domain}/reset/"), link
    path = link.split(alpha.domain, 1)[1]
    lucia = alpha.dashboard()
    form_page = lucia.get(path, follow=True)
    assert form_page.status_code == 200 and form_page.context["validlink"]
    set_url = form_page.redirect_chain[-1][0]
    done = lucia.post(set_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302
    assert alpha.dashboard().post("/login/", {"username": "lucia", "password": NEW_PASSWORD}).status_code == 302
    again = alpha.dashboard().get(path, follow=True)
    assert not again.context["validlink"], "the link works once"


def test_it_refuses_an_invitation_without_an_address_and_keeps_the_form(alpha):
    """A4: no e-mail and no password is a form error; nobody is created."""
    response = alpha.dashboard("ana").post("/people/", {"username": "nadie", "email": "", "role": "support", "password": ""})
    assert response.status_code == 200
    assert "email" in response.context["form"].errors
    with alpha.schema():
        assert not User.objects.filter(username="nadie").exists()


@pytest.mark.parametrize("username", ["ana", "ANA", "bad name!", ""])
def test_it_refuses_a_taken_or_malformed_username(alpha, username):
    """A4: usernames are unique (case-insensitively) and well formed; the form says which rule."""
    response = alpha.dashboard("ana").post("/people/", {"username": username, "role": "support", "password": NEW_PASSWORD})
    assert response.status_code == 200 and "username" in response.context["form"].errors


def test_it_refuses_a_weak_password_with_the_validators_message(alpha):
    """A4: the password validators apply to a password set by an admin."""
    response = alpha.dashboard("ana").post("/people/", {"username": "debil", "role": "support", "password": "123"})
    assert response.status_code == 200 and "password" in response.context["form"].errors


def test_it_changes_a_role_and_the_change_applies_on_the_next_request(alpha):
    """T4: sam promoted to admin reaches settings at once; demoted again, he does not."""
    admin, sam = alpha.dashboard("ana"), alpha.dashboard("sam")
    with alpha.schema():
        sam_id = User.objects.get(username="sam").pk
    assert sam.get("/settings/").status_code == 403
    assert admin.post(f"/people/{sam_id}/", {"role": "admin"}).status_code == 302
    assert sam.get("/settings/").status_code == 200
    assert admin.post(f"/people/{sam_id}/", {"role": "support"}).status_code == 302
    assert sam.get("/settings/").status_code == 403


def test_it_signs_a_deactivated_user_out_at_once_and_refuses_their_password(alpha):
    """T4: deactivating ends the person's sessions and sign-ins; reactivating restores them."""
    admin, sam = alpha.dashboard("ana"), alpha.dashboard("sam")
    with alpha.schema():
        sam_id = User.objects.get(username="sam").pk
    assert admin.post(f"/people/{sam_id}/", {"is_active": "false"}).status_code == 302
    assert sam.get("/calls/").status_code == 302, "the session no longer works"
    assert alpha.dashboard().post("/login/", {"username": "sam", "password": PASSWORD}).status_code == 200
    admin.post(f"/people/{sam_id}/", {"is_active": "true"})
    assert alpha.dashboard().post("/login/", {"username": "sam", "password": PASSWORD}).status_code == 302
    # Issue 19: the cookie from before the deactivation stays dead after the reactivation; the admin's works.
    assert sam.get("/calls/").status_code == 302 and admin.get("/calls/").status_code == 200


def test_it_keeps_the_last_active_admin(alpha):
    """T4: the only admin can neither demote nor deactivate themselves; the page says why."""
    admin = alpha.dashboard("ana")
    with alpha.schema():
        ana_id = User.objects.get(username="ana").pk
        # tenant_create's first admin ("admin") steps aside: ana is the only active admin left.
        User.objects.exclude(pk=ana_id).filter(role=User.Role.ADMIN).update(is_active=False)
    for change in ({"role": "support"}, {"is_active": "false"}):
        response = admin.post(f"/people/{ana_id}/", change, follow=True, HTTP_ACCEPT_LANGUAGE="en")
        assert "last active admin" in response.content.decode(), change
    with alpha.schema():
        ana = User.objects.get(pk=ana_id)
        assert ana.role == User.Role.ADMIN and ana.is_active
    # With a second admin, ana may step down.
    with alpha.schema():
        User.objects.filter(username="sam").update(role=User.Role.ADMIN)
    assert admin.post(f"/people/{ana_id}/", {"role": "support"}).status_code == 302
    with alpha.schema():
        assert User.objects.get(pk=ana_id).role == User.Role.SUPPORT


def test_it_does_not_reach_another_tenants_people(alpha, beta):
    """T1: alpha's admin neither sees nor changes a user who exists only in beta's schema."""
    with beta.schema():
        only_beta = User.objects.create_user("solo-beta", password=PASSWORD, role=User.Role.SUPPORT)
    with alpha.schema():
        assert not User.objects.filter(pk=only_beta.pk).exists()
    admin = alpha.dashboard("ana")
    assert "solo-beta" not in admin.get("/people/").content.decode()
    assert admin.post(f"/people/{only_beta.pk}/", {"role": "admin"}).status_code == 404
    with beta.schema():
        assert User.objects.get(pk=only_beta.pk).role == User.Role.SUPPORT
