"""Dashboard pages for people (T4): the tenant's admins add, invite, change and deactivate
users; everyone changes their own password; anyone who forgot theirs gets a link by e-mail.

Pages run in the tenant's schema (resolved by domain), where its users live (T1)."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from accounts import services
from accounts.forms import PasswordForgotForm, PersonCreateForm, PersonUpdateForm
from accounts.models import User
from asixto.errors import ApplicationError
from tenants.access import admin_page, tenant_page
from tenants.pages import list_page


MAIL_FAILED = gettext_lazy(
    "The e-mail for %(name)s could not be sent (the mail server did not accept it). Try Send password link later."
)


def _dashboard_url(request) -> str:
    return services.dashboard_url(tenant=request.tenant)


def _apply_service_errors(form, exc: ApplicationError):
    for field, errors in exc.fields.items():
        for error in errors:
            form.add_error(field if field in form.fields else None, error)
    if not exc.fields:
        form.add_error(None, exc.message)


@admin_page
def people_page(request):
    form = PersonCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.user_create(**form.cleaned_data, invite_base_url=_dashboard_url(request))
        except ApplicationError as exc:
            _apply_service_errors(form, exc)
        else:
            if form.cleaned_data["password"]:
                messages.success(request, _("%(name)s can sign in now.") % {"name": user.username})
            elif user.invitation_sent is False:
                messages.error(request, MAIL_FAILED % {"name": user.username})
            else:
                messages.success(request, _("Invitation sent to %(email)s.") % {"email": user.email})
            return redirect("dashboard:people")
    people = User.objects.order_by("-is_active", "username")
    page = list_page(request, people)
    return render(request, "accounts/people.html", {
        "nav": "people", "form": form, "page": page, "people": page, "roles": User.Role.choices,
    })


@admin_page
@require_POST
def person_update(request, pk):
    person = get_object_or_404(User, pk=pk)
    form = PersonUpdateForm(request.POST)
    if not form.is_valid() or not form.changes():
        messages.error(request, _("Nothing to change."))
        return redirect("dashboard:people")
    try:
        person = services.user_update(user=person, **form.changes())
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("%(name)s: %(role)s, %(state)s.") % {
            "name": person.username, "role": person.get_role_display(),
            "state": _("active") if person.is_active else _("deactivated"),
        })
    return redirect("dashboard:people")


@admin_page
@require_POST
def person_password_link(request, pk):
    person = get_object_or_404(User, pk=pk)
    if not person.is_active or not person.email:
        messages.error(request, _("%(name)s has no e-mail address or is deactivated.") % {"name": person.username})
    elif services.password_link_send(user=person, base_url=_dashboard_url(request), invitation=not person.has_usable_password()):
        messages.success(request, _("A link to choose a password was sent to %(email)s.") % {"email": person.email})
    else:
        messages.error(request, MAIL_FAILED % {"name": person.username})
    return redirect("dashboard:people")


class PasswordChangeView(auth_views.PasswordChangeView):
    """One's own password: the current one, then the new one twice (Django's form and validators)."""

    template_name = "accounts/password_change.html"
    success_url = reverse_lazy("dashboard:home")
    extra_context = {"nav": "password"}

    def form_valid(self, form):
        messages.success(self.request, _("Your password was changed."))
        return super().form_valid(form)


def password_forgot(request):
    """Anyone on the tenant's domain: a link by e-mail for every active person with that address.
    The answer is the same whether the address is known or not (no list of addresses to fish)."""
    form = PasswordForgotForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        address = form.cleaned_data["email"].lower()
        if services.password_link_allowed(address=address):
            for person in User.objects.filter(email__iexact=address, is_active=True):
                services.password_link_send(user=person, base_url=_dashboard_url(request))
        messages.success(request, _("If the address belongs to someone here, a link to choose a password is on its way."))
        return redirect("dashboard:login")
    return render(request, "accounts/password_forgot.html", {"form": form})


class PasswordResetView(auth_views.PasswordResetConfirmView):
    """The link from an invitation or a reset: choose a password, then sign in."""

    template_name = "accounts/password_reset.html"
    success_url = reverse_lazy("dashboard:login")

    def form_valid(self, form):
        messages.success(self.request, _("Your password is set. Sign in with it."))
        return super().form_valid(form)


urlpatterns = [
    path("people/", people_page, name="people"),
    path("people/<int:pk>/", person_update, name="person_update"),
    path("people/<int:pk>/password-link/", person_password_link, name="person_password_link"),
    path("account/password/", tenant_page(PasswordChangeView.as_view()), name="password_change"),
    path("password/forgot/", password_forgot, name="password_forgot"),
    path("reset/<uidb64>/<token>/", PasswordResetView.as_view(), name="password_reset"),
]
