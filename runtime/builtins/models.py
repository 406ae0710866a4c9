"""Tenant-schema models of the built-in tools (R12, R13): what they write (follow-ups, reminders,
contact details, documents), the skills a tenant defines, and the agent options the built-ins
read (the public-sources switch). Imported by runtime/models.py so Django finds them."""

import uuid

from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

SKILL_NAME = RegexValidator(r"^[a-z0-9][a-z0-9_]{0,39}$", _("Use lowercase letters, digits and underscores (at most 40)."))


class AgentOptions(models.Model):
    """One row per tenant schema. The public-sources switch belongs on Tenant (T6); it lives here
    until the tenant model can change, and moves with a data migration then."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    public_sources = models.BooleanField(
        _("public sources"), default=False,
        help_text=_("Lets the agent search the web and read public pages. Facts from them are labelled as public."))
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("agent options")

    @classmethod
    def current(cls) -> "AgentOptions":
        return cls.objects.get_or_create(pk=1)[0]


class _Written(models.Model):
    """What a built-in tool wrote in a turn, keyed by the step's idempotency key (R10)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    turn = models.ForeignKey("runtime.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    conversation = models.ForeignKey("runtime.Conversation", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    idempotency_key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True, db_index=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]


class FollowUp(_Written):
    due_at = models.DateTimeField(_("due"))
    reason = models.CharField(_("reason"), max_length=500)
    done = models.BooleanField(_("done"), default=False)


class Reminder(_Written):
    remind_at = models.DateTimeField(_("remind at"))
    text = models.CharField(_("text"), max_length=500)
    sent = models.BooleanField(_("sent"), default=False)


class ContactCapture(_Written):
    name = models.CharField(_("name"), max_length=200, blank=True)
    email = models.EmailField(_("email"), max_length=254, blank=True)
    phone = models.CharField(_("phone"), max_length=40, blank=True)


class Document(models.Model):
    """A tenant's text document that turns may append to or replace text in."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("name"), max_length=100, unique=True)
    text = models.TextField(_("text"), blank=True)
    last_edit_key = models.CharField(max_length=200, blank=True)  # a re-sent step edits once (R10)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Skill(models.Model):
    """A tenant-defined bundle: instructions and the tools that come with them (R12). Its tools
    are offered only once a turn loaded it with `asixto__invoke_skill`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("name"), max_length=40, unique=True, validators=[SKILL_NAME])
    description = models.CharField(_("description"), max_length=300,
                                   help_text=_("What the skill is for; the model reads it before loading the skill."))
    triggers = models.TextField(_("trigger phrases"), blank=True, help_text=_(
        "One phrase per line. A message that contains one lets the agent load the skill."))
    instructions = models.TextField(_("instructions"), max_length=8000)
    tools = models.JSONField(_("tools"), default=list, blank=True, help_text=_(
        "Model-visible names of catalog tools and built-in tools the skill brings."))
    enabled = models.BooleanField(_("enabled"), default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def trigger_phrases(self) -> list[str]:
        return [line.strip() for line in self.triggers.splitlines() if line.strip()]
