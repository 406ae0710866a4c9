"""Dashboard forms for MCP servers and tools."""

from django import forms
from django.utils.translation import gettext_lazy as _

from asixto.json_input import JsonInputError, load_json
from tenants.models import ApprovedCommand
from tools.auth_headers import auth_header_problems
from tools.models import McpServer
from tools.servers import env_state


class ServerForm(forms.ModelForm):
    """Register or edit a server (M1). Auth headers are write-only (T7): the field starts empty;
    leaving it empty keeps the stored headers."""

    command = forms.ChoiceField(label=_("Approved command (stdio)"), required=False)
    args_text = forms.CharField(
        label=_("Extra arguments (one per line)"), required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 3})
    )
    headers_text = forms.CharField(
        label=_("Auth headers (one per line, Name: value)"), required=False, max_length=20000,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
    )
    clear_headers = forms.BooleanField(
        label=_("Remove the stored auth headers"), required=False,
        help_text=_("Auth headers go only to this server: changing the URL's host removes them unless you enter new ones."))
    env_text = forms.CharField(
        label=_("Environment variables (one per line, NAME=value)"), required=False, max_length=50000,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
        help_text=_("Only the variables the approved command declares. Secret values are never shown: "
                    "leave a secret out to keep it, write NAME= to remove it."),
    )

    class Meta:
        model = McpServer
        fields = ["slug", "name", "transport", "url", "command", "timeout_seconds", "enabled", "contract_mode"]

    # Which fields belong to which transport: the page shows only the chosen transport's (the
    # script in static/asixto/app.js reads these marks), and what is saved drops the others.
    HTTP_TRANSPORTS = f"{McpServer.Transport.STREAMABLE_HTTP} {McpServer.Transport.SSE}"
    TRANSPORT_FIELDS = {
        "url": HTTP_TRANSPORTS, "headers_text": HTTP_TRANSPORTS, "clear_headers": HTTP_TRANSPORTS,
        "command": McpServer.Transport.STDIO, "args_text": McpServer.Transport.STDIO, "env_text": McpServer.Transport.STDIO,
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        commands = list(ApprovedCommand.objects.filter(enabled=True))
        self.fields["command"].choices = [("", "—")] + [(c.slug, _command_label(c)) for c in commands]
        if not commands:
            self.fields["command"].help_text = _("No command is approved yet: a platform operator approves stdio commands in the Django admin.")
        self.fields["transport"].choices = McpServer.Transport.choices  # no empty choice: HTTP by default
        self.fields["transport"].initial = McpServer.Transport.STREAMABLE_HTTP
        for name, transports in self.TRANSPORT_FIELDS.items():
            self.fields[name].widget.attrs["data-transports"] = transports
        self.initial["args_text"] = "\n".join(self.instance.args or [])
        self.env_vars = env_state(self.instance) if not self.instance._state.adding else []
        self.initial["env_text"] = "\n".join(
            f"{var['name']}={var['value']}" for var in self.env_vars if not var["secret"] and var["set"]
        )
        if not self.instance._state.adding:
            self.fields["slug"].disabled = True

    def clean_args_text(self):
        return [line.strip() for line in self.cleaned_data["args_text"].splitlines() if line.strip()]

    def clean_headers_text(self):
        headers, problems = _pairs(
            self.cleaned_data["headers_text"], ":", _("Line %(number)d is not 'Name: value'."),
            _("This header is listed twice: %(name)s"), value_required=True,
        )
        # The API's rule, so both surfaces store the same headers (M1).
        problems += auth_header_problems(headers)
        if problems:
            raise forms.ValidationError(problems)
        return headers

    def clean_env_text(self):
        # Values are kept as typed (spaces included); NAME= removes a variable.
        env, problems = _pairs(
            self.cleaned_data["env_text"], "=", _("Line %(number)d is not 'NAME=value'."),
            _("This variable is listed twice: %(name)s"), value_required=False,
        )
        if problems:
            raise forms.ValidationError(problems)
        # Plain variables left out are removed (the field shows them all); secrets are kept.
        same_command = self.cleaned_data.get("command") == self.instance.command
        for var in self.env_vars if same_command else ():
            if not var["secret"] and var["set"] and var["name"] not in env:
                env[var["name"]] = ""
        return env

    def service_data(self):
        data = {name: self.cleaned_data[name] for name in self.Meta.fields if name in self.cleaned_data}
        data["args"] = self.cleaned_data["args_text"]
        # Only the chosen transport's fields count (hidden ones may still hold what was typed).
        if data.get("transport") == McpServer.Transport.STDIO:
            data["url"] = ""
            data["env"] = self.cleaned_data["env_text"]
        else:
            data["command"], data["args"] = "", []
        if self.cleaned_data.get("clear_headers"):
            data["auth_headers"] = {}
        elif self.cleaned_data.get("headers_text"):
            data["auth_headers"] = self.cleaned_data["headers_text"]
        if not self.instance._state.adding:
            data.pop("slug", None)
        return data


def _pairs(text, separator, bad_line, twice, *, value_required):
    """`name<separator>value` lines typed into the dashboard → (name → value, problems)."""
    found, problems = {}, []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition(separator)
        name = name.strip()
        value = value.strip() if value_required else value
        if not sep or not name or (value_required and not value):
            problems.append(bad_line % {"number": number})
        elif name in found:
            problems.append(twice % {"name": name})
        else:
            found[name] = value
    return found, problems


def _command_label(command) -> str:
    label = f"{command.slug} — {command.description}"
    if command.tenant_vars:
        names = ", ".join(f"{name} ({_('secret')})" if secret else name for name, secret in command.declared_vars.items())
        label += " · " + _("variables: %(names)s") % {"names": names}
    return label


def _json_object(text):
    """Parse JSON typed into the dashboard, held to what can be processed and stored (A4)."""
    try:
        return load_json(text)
    except JsonInputError as exc:
        raise forms.ValidationError(str(exc)) from exc


class SampleArgumentsForm(forms.Form):
    sample_arguments = forms.CharField(
        label=_("Sample arguments (JSON object)"), required=False, max_length=20000, widget=forms.Textarea(attrs={"rows": 6})
    )

    def clean_sample_arguments(self):
        text = self.cleaned_data["sample_arguments"].strip()
        if not text:
            return None
        value = _json_object(text)
        if not isinstance(value, dict):
            raise forms.ValidationError(_("Sample arguments must be a JSON object."))
        return value


class ConsoleForm(forms.Form):
    """One test call through the gateway, with the channel a turn would have (A1, G9)."""

    arguments = forms.CharField(label=_("Arguments (JSON object)"), max_length=100000, widget=forms.Textarea(attrs={"rows": 8}))
    channel = forms.ChoiceField(label=_("Channel"), choices=[("chat", _("chat")), ("voice", _("voice"))])

    def clean_arguments(self):
        value = _json_object(self.cleaned_data["arguments"])
        if not isinstance(value, dict):
            raise forms.ValidationError(_("The arguments must be a JSON object."))
        return value
