"""Dashboard forms for a tenant's people (T4) and for one's own password."""

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import User


class PersonCreateForm(forms.Form):
    """Add a person. Without a password they are invited by e-mail to choose one."""

    username = forms.CharField(label=_("Username"), max_length=150)
    email = forms.EmailField(label=_("E-mail"), required=False)
    role = forms.ChoiceField(label=_("Role"), choices=User.Role.choices, initial=User.Role.SUPPORT)
    password = forms.CharField(
        label=_("Password"), required=False, max_length=128,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Leave empty to send an invitation: the person chooses a password from a link in the e-mail."),
    )


class PersonUpdateForm(forms.Form):
    """One change to a person, from the buttons of their row on the people page."""

    role = forms.ChoiceField(label=_("Role"), choices=User.Role.choices, required=False)
    is_active = forms.TypedChoiceField(
        label=_("Access"), required=False, coerce=lambda value: value == "true", empty_value=None,
        choices=[("true", _("active")), ("false", _("deactivated"))],
    )

    def changes(self) -> dict:
        data = {}
        if self.cleaned_data.get("role"):
            data["role"] = self.cleaned_data["role"]
        if self.cleaned_data.get("is_active") is not None:
            data["is_active"] = self.cleaned_data["is_active"]
        return data


class PasswordForgotForm(forms.Form):
    email = forms.EmailField(label=_("E-mail"), max_length=254)
