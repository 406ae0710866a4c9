"""Writes on a tenant's people (T4): add or invite a user with a role, change the role,
deactivate or reactivate, send a link to set a password. The dashboard and the API both come
here, so the rule that a tenant always keeps one active admin has one home.

Every function runs in the current tenant's schema (users live there, T1)."""

import hashlib
import logging
import smtplib

from django.conf import settings
from django.contrib.auth import password_validation
from django.contrib.auth.tokens import default_token_generator
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, connection, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from accounts.models import User
from asixto.errors import ApplicationError
from tenants.models import Tenant

log = logging.getLogger(__name__)
USERNAME_FIELD = User._meta.get_field("username")


def _check_username(username: str) -> str:
    username = (username or "").strip()
    try:
        USERNAME_FIELD.run_validators(username)
    except ValidationError as exc:
        raise ApplicationError(_("The user cannot be saved."), fields={"username": list(exc.messages)}) from exc
    if not username:
        raise ApplicationError(_("The user cannot be saved."), fields={"username": [_("Give a username.")]})
    if User.objects.filter(username__iexact=username).exists():
        raise ApplicationError(
            _("The user cannot be saved."), fields={"username": [_("A user with this username already exists.")]}
        )
    return username


def _check_password(password: str, user: User):
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise ApplicationError(_("The user cannot be saved."), fields={"password": list(exc.messages)}) from exc


def user_create(*, username: str, role: str, email: str = "", password: str = "", invite_base_url: str = "") -> User:
    """Add a person with a role. With a password, they can sign in at once; without one, they
    get an e-mail with a link to choose it (an invitation), so an e-mail address is required.
    `user.invitation_sent` says whether the invitation went out (None: not yet, it leaves when
    the caller's transaction commits)."""
    if role not in User.Role.values:
        raise ApplicationError(_("The user cannot be saved."), fields={"role": [_("Unknown role.")]})
    username = _check_username(username)
    email = (email or "").strip()
    if not password and not email:
        raise ApplicationError(
            _("The user cannot be saved."),
            fields={"email": [_("Give an e-mail address for the invitation, or a password.")]},
        )
    user = User(username=username, email=email, role=role)
    if password:
        _check_password(password, user)
        user.set_password(password)
    else:
        user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError as exc:  # the same name, added a moment ago by someone else
        raise ApplicationError(
            _("The user cannot be saved."), fields={"username": [_("A user with this username already exists.")]}
        ) from exc
    user.invitation_sent = None
    if not password:
        if connection.in_atomic_block:
            # Sent once the caller's transaction commits: a rolled-back user gets no working link.
            transaction.on_commit(lambda: password_link_send(user=user, base_url=invite_base_url, invitation=True))
        else:
            user.invitation_sent = password_link_send(user=user, base_url=invite_base_url, invitation=True)
    return user


def _other_active_admins(user: User):
    return User.objects.filter(role=User.Role.ADMIN, is_active=True).exclude(pk=user.pk)


def _keep_one_admin(user: User):
    """Refuse a change that would leave the tenant without an active admin. The admins' rows are
    locked first, so two admins demoting each other at once cannot both succeed."""
    list(User.objects.select_for_update().filter(role=User.Role.ADMIN, is_active=True).values_list("pk", flat=True))
    if user.role == User.Role.ADMIN and user.is_active and not _other_active_admins(user).exists():
        raise ApplicationError(
            _("This is the last active admin. Make another person an admin first."), code="last_admin", status_code=409
        )


@transaction.atomic
def user_update(*, user: User, role: str | None = None, is_active: bool | None = None, email: str | None = None) -> User:
    """Change a person's role, whether they may sign in, or their e-mail address. Demoting or
    deactivating the last active admin is refused (T4). A deactivated person's sessions end at
    once, and are deleted, so reactivating them later does not bring an old cookie back."""
    user = User.objects.select_for_update().get(pk=user.pk)
    if role is not None and role not in User.Role.values:
        raise ApplicationError(_("The user cannot be saved."), fields={"role": [_("Unknown role.")]})
    losing_admin = (role is not None and role != User.Role.ADMIN) or is_active is False
    if losing_admin:
        _keep_one_admin(user)
    changed = []
    if role is not None and role != user.role:
        user.role = role
        changed.append("role")
    if is_active is not None and is_active != user.is_active:
        user.is_active = is_active
        changed.append("is_active")
    if email is not None and email.strip() != user.email:
        user.email = email.strip()
        changed.append("email")
    if changed:
        user.save(update_fields=changed)
    if "is_active" in changed and not user.is_active:
        end_sessions(user)
    return user


def end_sessions(user: User) -> int:
    """Delete every stored session of `user` (issue 19): a deactivated person's cookie must not
    work again if they are reactivated later. Returns how many ended."""
    from django.contrib.auth import SESSION_KEY
    from django.contrib.sessions.models import Session

    mine = [session.pk for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
            if str(session.get_decoded().get(SESSION_KEY)) == str(user.pk)]
    Session.objects.filter(pk__in=mine).delete()
    return len(mine)


def user_deactivate(*, user: User) -> User:
    """Remove a person's access; their row stays (records name who did what)."""
    return user_update(user=user, is_active=False)


def password_change(*, user: User, password: str) -> User:
    """Set a new password after the validators agree (the person's own change, or a reset)."""
    _check_password(password, user)
    user.set_password(password)
    user.save(update_fields=["password"])
    return user


def dashboard_url(*, tenant: Tenant) -> str:
    """Where `tenant`'s dashboard answers: its primary domain, with the configured scheme and port
    (ASIXTO_DASHBOARD_SCHEME, ASIXTO_DASHBOARD_PORT). Never from the request: its Host header and
    port are the caller's to choose, and a link sent by e-mail must go to the dashboard (issue 19)."""
    domain = tenant.get_primary_domain()
    host = domain.domain if domain else ""
    scheme, port = settings.ASIXTO_DASHBOARD_SCHEME, str(settings.ASIXTO_DASHBOARD_PORT or "")
    default_port = {"http": "80", "https": "443"}.get(scheme)
    suffix = f":{port}" if port and port != default_port else ""
    return f"{scheme}://{host}{suffix}"


def password_link(*, user: User, base_url: str) -> str:
    """A single-use link to choose a password: Django's reset token, which stops working once
    the password changes or the person signs in."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    # The dashboard's URLconf by name: API requests and workers may have another one active.
    path = reverse("dashboard:password_reset", urlconf=settings.ROOT_URLCONF, kwargs={"uidb64": uid, "token": token})
    return f"{base_url.rstrip('/')}{path}"


PASSWORD_LINKS_PER_HOUR = 3


def password_link_allowed(*, address: str) -> bool:
    """At most a few "forgot your password" e-mails per address and hour, so the form cannot be
    used to flood someone's inbox. Counted in the cache (its keys carry the tenant's schema)."""
    key = f"password-links:{hashlib.sha256(address.encode()).hexdigest()}"
    cache.add(key, 0, timeout=3600)
    try:
        return cache.incr(key) <= PASSWORD_LINKS_PER_HOUR
    except ValueError:  # expired between add and incr
        return True


def password_link_send(*, user: User, base_url: str, invitation: bool = False) -> bool:
    """E-mail `user` a link to choose a password (an invitation for a new person, a reset for
    others). Nothing is sent to an inactive user or one without an address."""
    if not user.is_active or not user.email:
        return False
    context = {"user": user, "link": password_link(user=user, base_url=base_url), "invitation": invitation}
    subject = render_to_string("registration/password_link_subject.txt", context).strip()
    body = render_to_string("registration/password_link_email.txt", context)
    try:
        send_mail(subject, body, None, [user.email])
    except (smtplib.SMTPException, OSError):  # the mail server is down or refuses: say so, keep the user
        log.warning("The password link for user %s could not be sent", user.pk, exc_info=True)
        return False
    return True
