"""Tenant-schema models of the built-in tools (R12): what they write (follow-ups, reminders,
contact details, documents) and the skills a tenant defines. The public-sources switch (R13) is a
tenant setting (`Tenant.public_sources`, T6). Imported by runtime/models.py so Django finds them."""

import uuid

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils.functional import cached_property
from django.utils.translation import gettext_lazy as _

SKILL_NAME = RegexValidator(r"^[a-z0-9][a-z0-9_]{0,39}$", _("Use lowercase letters, digits and underscores (at most 40)."))
# Every message of a turn is read against every enabled skill's phrases, on the workers all tenants
# share: a tenant's phrases are bounded so its skills cost every message little (a security review).
MAX_TRIGGER_PHRASES = 50
MAX_TRIGGER_CHARS = 100
MAX_SKILLS = 100


def validate_triggers(text: str) -> None:
    phrases = [line.strip() for line in text.splitlines() if line.strip()]
    if len(phrases) > MAX_TRIGGER_PHRASES or any(len(phrase) > MAX_TRIGGER_CHARS for phrase in phrases):
        raise ValidationError(_("At most %(count)d phrases of at most %(chars)d characters each.")
                              % {"count": MAX_TRIGGER_PHRASES, "chars": MAX_TRIGGER_CHARS})


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


class _Scheduled(_Written):
    """Something sent to the customer later: when `due_at` passes, a sweep claims it once, stores
    the notice in the conversation and pushes it to the channel (runtime/builtins/delivery.py).
    Pending until then; it can be cancelled while pending."""

    class State(models.TextChoices):
        PENDING = "pending", _("pending")
        DELIVERED = "delivered", _("delivered")
        CANCELLED = "cancelled", _("cancelled")

    due_at = models.DateTimeField(_("due"), db_index=True)
    state = models.CharField(_("state"), max_length=10, choices=State.choices, default=State.PENDING, db_index=True)
    delivered_at = models.DateTimeField(_("delivered"), null=True, blank=True)
    cancelled_at = models.DateTimeField(_("cancelled"), null=True, blank=True)
    notice = models.OneToOneField("runtime.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta(_Written.Meta):
        abstract = True
        ordering = ["due_at"]


class FollowUp(_Scheduled):
    """The company contacts the customer again (asixto__schedule_follow_up)."""

    EVENT = "follow_up.due"
    reason = models.CharField(_("reason"), max_length=500)

    @property
    def subject(self) -> str:
        return self.reason


class Reminder(_Scheduled):
    """The customer is reminded of something (asixto__create_reminder)."""

    EVENT = "reminder.due"
    text = models.CharField(_("text"), max_length=500)

    @property
    def subject(self) -> str:
        return self.text


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
    triggers = models.TextField(_("trigger phrases"), blank=True, validators=[validate_triggers], help_text=_(
        "One phrase per line (at most 50, of at most 100 characters). A message that contains one lets the agent "
        "load the skill."))
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

    @cached_property
    def folded_triggers(self) -> tuple[str, ...]:
        """The phrases as messages are read (runtime.builtins.registry.fold), folded once per loaded
        skill: the enabled skills are kept per catalog generation, and read at every message."""
        from runtime.builtins.registry import fold

        return tuple(fold(phrase) for phrase in self.trigger_phrases()[:MAX_TRIGGER_PHRASES])
