"""Public-schema models: tenants and their domains, API keys, operator-approved stdio commands
and private hosts."""

import hashlib
import re
import secrets
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_tenants.models import DomainMixin, TenantMixin
from django_tenants.postgresql_backend.base import _check_schema_name
from django_tenants.utils import schema_exists

from tenants.crypto import EncryptedTextField
from tenants.outbound import PURPOSES, normalise_approved_host, parse_ports

SLUG_PATTERN = r"^[a-z][a-z0-9-]{1,38}[a-z0-9]$"
RESERVED_SLUGS = {"public", "www", "admin", "api", "static", "pg-catalog", "information-schema"}
slug_validator = RegexValidator(
    SLUG_PATTERN, _("Use 3–40 lowercase letters, digits or hyphens, starting with a letter.")
)


def default_scenarios():
    return []


MAX_SERVER_QUOTA = 10000

CHANNELS = ("chat", "voice")
LEVELS = ("read", "write", "destructive")


def default_exposure_policy():
    """Every level on every channel (M7's default); tenants narrow it per channel."""
    return {channel: list(LEVELS) for channel in CHANNELS}


class Tenant(TenantMixin):
    """A company. Its agent settings (T6) live here; its data lives in its own schema (T1)."""

    slug = models.SlugField(_("slug"), max_length=40, unique=True, validators=[slug_validator])
    name = models.CharField(_("name"), max_length=120)
    created_at = models.DateTimeField(auto_now_add=True)

    agent_instructions = models.TextField(_("agent instructions"), blank=True, max_length=20000)
    language = models.CharField(_("customer language"), max_length=8, default="es")
    model_base_url = models.URLField(_("model endpoint"), blank=True, max_length=500)
    model_name = models.CharField(_("model name"), max_length=200, blank=True)
    model_api_key = EncryptedTextField(_("model API key"), blank=True)
    router_base_url = models.URLField(_("router model endpoint"), blank=True, max_length=500)
    router_model_name = models.CharField(_("router model name"), max_length=200, blank=True)
    router_api_key = EncryptedTextField(_("router model API key"), blank=True)
    # What the tenant pays its model provider per million tokens, in and out (issue 20): the usage
    # figures show a cost when one is set. No currency: the tenant's own.
    price_in_per_million = models.DecimalField(
        _("price per million input tokens"), max_digits=12, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(0)],
        help_text=_("Optional: what your model provider charges per million input (prompt) tokens, to show the cost of usage."),
    )
    price_out_per_million = models.DecimalField(
        _("price per million output tokens"), max_digits=12, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(0)],
        help_text=_("Optional: what your model provider charges per million output (completion) tokens."),
    )
    iteration_limit = models.PositiveSmallIntegerField(
        _("iteration limit"), default=6, validators=[MinValueValidator(1), MaxValueValidator(50)]
    )
    result_budget = models.PositiveIntegerField(
        _("per-result budget (characters)"), default=3000, validators=[MinValueValidator(200), MaxValueValidator(100000)]
    )
    turn_budget = models.PositiveIntegerField(
        _("per-turn budget (characters)"), default=12000, validators=[MinValueValidator(200), MaxValueValidator(500000)]
    )
    public_sources = models.BooleanField(_("public sources (web search and page reading)"), default=False)
    # Off: traces carry ids, names and outcomes only. On: the customer's message and tool arguments too.
    trace_contents = models.BooleanField(_("trace contents"), default=False)
    # The tenant's own web search backend (R13); empty: the platform's (ASIXTO_SEARCH_URL).
    search_url = models.URLField(
        _("web search backend"), blank=True, max_length=500,
        help_text=_("GET <url>?q=… answering {\"results\": [{\"title\", \"url\", \"snippet\"}]}. "
                    "Empty: the platform's search backend."),
    )
    scenarios = models.JSONField(_("scenarios"), default=default_scenarios, blank=True)
    # channel → tool levels agents may use there (M7); the gateway enforces it on every call.
    exposure_policy = models.JSONField(_("tool exposure per channel"), default=default_exposure_policy, blank=True)
    # Set by platform operators only (admin, operator API); tenants read it.
    server_quota = models.PositiveIntegerField(
        _("MCP server quota"), null=True, blank=True, validators=[MaxValueValidator(MAX_SERVER_QUOTA)],
        help_text=_("How many MCP servers this tenant may register. Empty: the platform default."),
    )
    # Fair share (issue 19, M4), also set by operators only: one tenant's flood never fills the
    # workers every tenant shares, and a channel key that loops is stopped at the door.
    turns_in_flight_limit = models.PositiveIntegerField(
        _("turns in flight"), null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(100000)],
        help_text=_("How many of this tenant's turns may wait or run at once; beyond, new messages are refused (429). "
                    "Empty: the platform default."),
    )
    messages_per_minute = models.PositiveIntegerField(
        _("messages per minute per key"), null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(100000)],
        help_text=_("How many messages each of this tenant's channel keys may post a minute (429 beyond). Empty: the platform default."),
    )

    auto_create_schema = True
    auto_drop_schema = False

    class Meta:
        verbose_name = _("tenant")
        verbose_name_plural = _("tenants")
        ordering = ["slug"]

    def create_schema(self, check_if_exists=False, sync_schema=True, verbosity=1):
        """Clone the migrated template schema (P5: a fraction of the time of ~50 migrations);
        ASIXTO_TENANT_CLONE=0, or a template the copy cannot reproduce, migrates the schema instead."""
        from tenants.schema_template import clone_template

        if settings.ASIXTO_TENANT_CLONE and sync_schema and not (check_if_exists and schema_exists(self.schema_name)):
            _check_schema_name(self.schema_name)
            if clone_template(schema_name=self.schema_name):
                return True
        return super().create_schema(check_if_exists=check_if_exists, sync_schema=sync_schema, verbosity=verbosity)

    def __str__(self):
        return self.slug

    @property
    def effective_server_quota(self) -> int:
        return settings.ASIXTO_DEFAULT_SERVER_QUOTA if self.server_quota is None else self.server_quota

    @property
    def effective_turns_in_flight_limit(self) -> int:
        return self.turns_in_flight_limit or settings.ASIXTO_TURNS_IN_FLIGHT_LIMIT

    @property
    def effective_messages_per_minute(self) -> int:
        return self.messages_per_minute or settings.ASIXTO_MESSAGES_PER_MINUTE

    def allows_level(self, channel: str, level: str) -> bool:
        allowed = (self.exposure_policy or {}).get(channel)
        return level in (LEVELS if allowed is None else allowed)


class Domain(DomainMixin):
    class Meta:
        verbose_name = _("domain")
        verbose_name_plural = _("domains")


# asx_<12 hex>_<token_urlsafe(32)>; the secret part is 43 characters today, allowed some room.
KEY_FORMAT = re.compile(r"asx_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})")


class ApiKeyQuerySet(models.QuerySet):
    def usable(self):
        """Keys that open the API now: not revoked, not expired (issue 20)."""
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=timezone.now())
        )


class ApiKey(models.Model):
    """A credential for the REST API (T2, T3). Only a SHA-256 of the key is stored: keys are
    256-bit random strings, so a fast hash is enough and keeps lookups cheap on every request.
    A key may expire (`expires_at`); `last_used_at` is kept to the minute (issue 20)."""

    class Scope(models.TextChoices):
        CHANNEL = "channel", _("Channel (conversations and turns)")
        ADMIN = "admin", _("Admin (everything of the tenant)")
        OPERATOR = "operator", _("Platform operator")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Operator keys belong to no tenant: they work on the public schema only.
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(_("name"), max_length=100)
    scope = models.CharField(_("scope"), max_length=16, choices=Scope.choices)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    # The key a rotation made to take this one's place: a webhook follows it (issue 20).
    replaced_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False)
    # One integration (a chat bridge, a voice gateway) is a key and every key rotated from it: they
    # share this id. A channel key reads and posts only its integration's conversations.
    integration = models.UUIDField(default=uuid.uuid4, editable=False, db_index=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                name="apikey_operator_has_no_tenant",
                condition=(models.Q(scope="operator", tenant__isnull=True) | (~models.Q(scope="operator") & models.Q(tenant__isnull=False))),
            )
        ]

    def __str__(self):
        return f"{self.name} ({self.prefix})"

    # Names the platform gives the keys it makes, stored in English and shown in the reader's
    # language (A3); names people give their keys are shown as they wrote them.
    # (Tenants created before this have the Spanish name stored.)
    PLATFORM_NAMES = {"First admin key": _("First admin key"), "Primera clave de administración": _("First admin key")}

    @property
    def display_name(self) -> str:
        return str(self.PLATFORM_NAMES.get(self.name, self.name))

    @property
    def is_expired(self):
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self):
        return self.revoked_at is None and not self.is_expired

    @staticmethod
    def hash(plaintext: str) -> str:
        return hashlib.sha256(plaintext.encode()).hexdigest()

    @staticmethod
    def generate() -> tuple[str, str]:
        """Return (prefix, plaintext). The prefix is the indexed lookup handle inside the key."""
        prefix = secrets.token_hex(6)
        return prefix, f"asx_{prefix}_{secrets.token_urlsafe(32)}"

    @staticmethod
    def parse_prefix(plaintext: str) -> str | None:
        """The prefix of a well-formed key, else None. Anything else a client sends (NUL bytes,
        surrogates, megabytes) never reaches a query or the hash (A4)."""
        match = KEY_FORMAT.fullmatch(plaintext)
        return match.group(1) if match else None


class ApprovedCommand(models.Model):
    """A stdio MCP server command an operator approved (M3): tenants pick one, never type one.

    Fixed arguments and `fixed_env` values may hold `{workdir}`, the tenant server's private
    persistent directory (tools.stdio_launch). `tenant_vars` declares the environment variables a
    tenant may set: `[{"name": "API_TOKEN", "secret": true}, ...]`; the rules are in
    tenants.stdio_commands."""

    slug = models.SlugField(_("slug"), max_length=60, unique=True)
    description = models.CharField(_("description"), max_length=300, blank=True)
    executable = models.CharField(_("executable"), max_length=500, help_text=_("Absolute path of the program."))
    base_args = models.JSONField(_("fixed arguments"), default=list, blank=True)
    allow_extra_args = models.BooleanField(_("tenants may add arguments"), default=False)
    fixed_env = models.JSONField(
        _("fixed environment"), default=dict, blank=True,
        help_text=_("Variables every server of this command gets, NAME → value; {workdir} is the server's private directory."),
    )
    tenant_vars = models.JSONField(
        _("variables tenants may set"), default=list, blank=True,
        help_text=_('For example [{"name": "API_TOKEN", "secret": true}]. Secret values are encrypted and never shown.'),
    )
    enabled = models.BooleanField(_("enabled"), default=True)

    class Meta:
        verbose_name = _("approved command")
        verbose_name_plural = _("approved commands")
        ordering = ["slug"]

    def __str__(self):
        return self.slug

    def clean_fields(self, exclude=None):
        super().clean_fields(exclude=exclude)
        from tenants.stdio_commands import command_problems  # it reads this module's constants

        problems = command_problems(self)
        if problems:
            raise ValidationError(problems)

    @property
    def declared_vars(self) -> dict[str, bool]:
        """Name → secret, for the variables tenants may set."""
        return {entry["name"]: bool(entry.get("secret")) for entry in self.tenant_vars or []}


class StdioAccount(models.Model):
    """The stable number of one tenant's stdio server (M3, issue 7): its uid is
    ASIXTO_STDIO_UID_BASE + this row's id when the platform runs as root, so no two servers,
    of one tenant or of two, share a user. Rows are never reused."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="stdio_accounts")
    server_id = models.UUIDField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "server_id"], name="stdioaccount_once")]

    def __str__(self):
        return f"{self.tenant} {self.server_id} #{self.pk}"


def default_approval_purposes():
    return ["model", "mcp"]


class ApprovedPrivateHost(models.Model):
    """A private host or network an operator approved as an outbound target (M2): a tenant's
    self-hosted model or MCP server on a private network, reachable without turning
    ASIXTO_ALLOW_PRIVATE_HOSTS on for everything. For one tenant, or (no tenant) for all."""

    host = models.CharField(
        _("host or network"), max_length=253,
        help_text=_("A host name (models.acme.internal), an address (10.0.5.20) or a network (10.0.5.0/24). "
                    "A host name covers its private addresses only; loopback and link-local need the address itself."),
    )
    tenant = models.ForeignKey(
        Tenant, verbose_name=_("tenant"), null=True, blank=True, on_delete=models.CASCADE, related_name="approved_private_hosts",
        help_text=_("Empty: every tenant may use it (a service the platform itself runs)."),
    )
    allow_http = models.BooleanField(
        _("plain http allowed"), default=False,
        help_text=_("For servers on a private network without a publicly trusted certificate. Secrets then travel unencrypted."),
    )
    ports = models.CharField(
        _("ports"), max_length=200, blank=True,
        help_text=_("The ports it may be reached on, separated by commas (8000, 8443). Empty: 443 and 80 only."),
    )
    purposes = models.JSONField(
        _("purposes"), default=default_approval_purposes, blank=True,
        help_text=_('What it is for: any of "model", "mcp", "webhook", "search". Pages a customer or the agent '
                    "names are never read through an approval."),
    )
    note = models.CharField(_("note"), max_length=300, blank=True)
    approved_by = models.CharField(_("approved by"), max_length=150, blank=True, editable=False)
    approved_at = models.DateTimeField(_("approved at"), default=timezone.now, editable=False)

    class Meta:
        ordering = ["host"]
        verbose_name = _("approved private host")
        verbose_name_plural = _("approved private hosts")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "host"], name="approvedprivatehost_once", nulls_distinct=False),
        ]

    def __str__(self):
        return f"{self.host} ({self.tenant or _('every tenant')})"

    def clean_fields(self, exclude=None):
        super().clean_fields(exclude=exclude)
        problems = {}
        try:
            self.host = normalise_approved_host(self.host)
        except ValueError as exc:
            problems["host"] = [str(exc)]
        try:
            self.ports = ", ".join(str(port) for port in sorted(parse_ports(self.ports)))
        except ValueError as exc:
            problems["ports"] = [_(str(exc))]
        if (not isinstance(self.purposes, list) or not self.purposes
                or not all(isinstance(purpose, str) and purpose in PURPOSES for purpose in self.purposes)):
            problems["purposes"] = [_("One or more of: %(names)s.") % {"names": ", ".join(PURPOSES)}]
        else:
            self.purposes = sorted(set(self.purposes), key=PURPOSES.index)
        if problems:
            raise ValidationError(problems)
