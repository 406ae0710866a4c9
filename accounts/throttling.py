"""Sign-in throttling (T4) with django-axes: what it counts and what a locked-out person sees.

Axes counts failed sign-ins in Redis (its cache handler) per account and per address, on the
tenant dashboards and the operators' admin alike. The cache's key function prefixes every key
with the current schema, so counters are per tenant: `ana` locked out on one tenant's domain is
not locked out on another's, where `ana` is somebody else. Settings: `AXES_*` in settings.py."""

import ipaddress

from django.conf import settings
from django.shortcuts import render
from django.utils.translation import gettext as _


def tracked_username(request, credentials) -> str | None:
    """The account axes counts failures for. Prefixed so that a username shaped like an address
    ("203.0.113.7") never shares a counter with that address (axes hashes the bare values)."""
    username = (credentials or {}).get("username") or request.POST.get("username")
    return f"user:{username}" if username else None


def client_address(request) -> str | None:
    """The address axes counts failures for. Behind `ASIXTO_TRUSTED_PROXIES` proxies (a load
    balancer) it is the one they saw in X-Forwarded-For; without proxies, the peer's address
    (a client-sent X-Forwarded-For is ignored: anyone can write one)."""
    proxies = settings.ASIXTO_TRUSTED_PROXIES
    if proxies:
        forwarded = [item.strip() for item in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if item.strip()]
        if len(forwarded) >= proxies:
            candidate = forwarded[-proxies]
            try:
                return str(ipaddress.ip_address(candidate))
            except ValueError:
                pass
    return request.META.get("REMOTE_ADDR")


def lockout_response(request, original_response=None, credentials=None):
    """429 with a page that says what happened and how long to wait (dashboard and admin)."""
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    message = _(
        "Too many failed sign-in attempts for this account or from this address. Try again in %(minutes)d minutes."
    ) % {"minutes": minutes}
    # Rendered here: axes swaps the response in after the view, too late for a TemplateResponse.
    return render(request, "registration/locked_out.html", {"message": message}, status=429)
