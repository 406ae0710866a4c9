"""Dashboard forms of the runtime: list filters, the playground's message, webhooks."""

from django import forms
from django.utils.translation import gettext_lazy as _

from asixto.date_fields import TypedDateField
from runtime.api.serializers import MAX_MESSAGE_CHARS
from runtime.models import CHANNEL_KINDS, TruncationLog, Turn
from runtime.search import MAX_QUERY_CHARS, query_problem

class RangeMixin:
    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", _("The end date is before the start date."))
        return data


class ConversationFilterForm(RangeMixin, forms.Form):
    q = forms.CharField(label=_("Search"), required=False, widget=forms.TextInput(attrs={"maxlength": MAX_QUERY_CHARS}),
                        help_text=_("Phone, e-mail, customer reference, channel or words of the messages"))
    channel_kind = forms.ChoiceField(label=_("Channel kind"), required=False, choices=[("", _("Any kind")), *CHANNEL_KINDS])
    channel_name = forms.CharField(label=_("Channel"), required=False, max_length=40)
    status = forms.ChoiceField(label=_("Turn status"), required=False, choices=[("", _("Any status")), *Turn.Status.choices])
    since = TypedDateField(label=_("From"), required=False)
    until = TypedDateField(label=_("To"), required=False)

    def clean_q(self):
        if problem := query_problem(self.cleaned_data["q"]):
            raise forms.ValidationError(problem)
        return self.cleaned_data["q"]


class TruncationFilterForm(RangeMixin, forms.Form):
    tool = forms.CharField(label=_("Tool"), required=False, max_length=250)
    kind = forms.ChoiceField(label=_("Kind"), required=False, choices=[("", _("Any budget")), *TruncationLog.Kind.choices])
    since = TypedDateField(label=_("From"), required=False)
    until = TypedDateField(label=_("To"), required=False)


class PlaygroundMessageForm(forms.Form):
    """One message from the admin, as a channel would post it."""

    text = forms.CharField(label=_("Message"), max_length=MAX_MESSAGE_CHARS, strip=True)
    conversation = forms.UUIDField(required=False)
    channel_kind = forms.ChoiceField(label=_("Channel kind"), choices=CHANNEL_KINDS, initial="chat", required=False)
    language = forms.RegexField(label=_("Customer language"), regex=r"^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$", max_length=16,
                                required=False, error_messages={"invalid": _("A language code such as es, en or es-CO.")})


class WebhookForm(forms.Form):
    api_key = forms.ChoiceField(label=_("API key"))
    url = forms.URLField(label=_("Callback URL"), max_length=500, assume_scheme="https")

    def __init__(self, *args, keys=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["api_key"].choices = [(str(key.pk), f"{key.display_name} (asx_{key.prefix}_…)") for key in keys]


class WebhookUrlForm(forms.Form):
    url = forms.URLField(label=_("Callback URL"), max_length=500, assume_scheme="https")


class SkillForm(forms.ModelForm):
    """A skill in the dashboard (R12): its tools one model-visible name per line."""

    tools_text = forms.CharField(label=_("Tools"), required=False, widget=forms.Textarea(attrs={"rows": 4}),
                                 help_text=_("One per line: catalog tools (soporte__abrir_caso_soporte) or built-ins "
                                             "(asixto__draw_chart)."))

    class Meta:
        from runtime.builtins.models import Skill

        model = Skill
        fields = ["name", "description", "triggers", "instructions", "enabled"]
        widgets = {"triggers": forms.Textarea(attrs={"rows": 3}), "instructions": forms.Textarea(attrs={"rows": 6})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.fields["tools_text"].initial = "\n".join(self.instance.tools or [])

    def clean_tools_text(self):
        from runtime.builtins.skills import unknown_tools

        names = list(dict.fromkeys(line.strip() for line in self.cleaned_data["tools_text"].splitlines() if line.strip()))
        unknown = unknown_tools(names)
        if unknown:
            raise forms.ValidationError(_("Unknown tools: %(names)s.") % {"names": ", ".join(unknown[:10])})
        return names
