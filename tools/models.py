"""Tenant-schema models of the tools app: MCP servers, their catalog versions, tools and findings."""

import json
import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from tenants.crypto import EncryptedTextField
from tools.texts import render_text

# snake_case: single underscores between letters and digits. No `__` and no `_` at either end, so
# the first `__` of a model-visible name `<slug>__<tool>` is always the separator and two
# (server, tool) pairs can never produce the same name (M6). The database checks it too.
SERVER_SLUG_PATTERN = r"\A[a-z][a-z0-9]*(_[a-z0-9]+)*\Z"  # \A, \Z: same meaning in Python and PostgreSQL
SERVER_SLUG_MAX = 20


class McpServer(models.Model):
    """A tenant's MCP server (M1). Its slug prefixes the names the model sees (M6)."""

    class Transport(models.TextChoices):
        STREAMABLE_HTTP = "streamable_http", _("Streamable HTTP")
        SSE = "sse", _("HTTP + SSE (deprecated)")
        STDIO = "stdio", _("stdio (operator-approved command)")

    class ContractMode(models.TextChoices):
        # Blank until the first sync decides: strict when the server declares our `com.asixto/`
        # `_meta`, compatible otherwise (see tools.overlays).
        STRICT = "strict", _("strict: the server keeps the whole contract")
        COMPATIBLE = "compatible", _("compatible: the gateway enforces what it can itself")

    class SyncStatus(models.TextChoices):
        NEVER = "never", _("never synced")
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("syncing")
        OK = "ok", _("synced")
        ERROR = "error", _("failed")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.CharField(
        _("slug"), max_length=SERVER_SLUG_MAX, unique=True,
        validators=[RegexValidator(SERVER_SLUG_PATTERN, _(
            "1–20 lowercase letters and digits, starting with a letter; words may be joined by single "
            "underscores (no “__”, no underscore at the end)."
        ))],
        help_text=_("Prefix of this server's tool names as the model sees them: <slug>__<tool>."),
    )
    name = models.CharField(_("name"), max_length=120, blank=True)
    transport = models.CharField(_("transport"), max_length=20, choices=Transport.choices)
    url = models.URLField(_("URL"), max_length=500, blank=True)
    command = models.CharField(_("approved command"), max_length=60, blank=True)
    args = models.JSONField(_("extra arguments"), default=list, blank=True)
    # JSON object of header name → value, encrypted (T7); never sent back.
    auth_headers = EncryptedTextField(_("auth headers"), blank=True)
    # stdio: the variables the approved command lets the tenant set (tenants.stdio_commands),
    # plain ones as they are, secret ones as an encrypted JSON object (T7), never sent back.
    env_values = models.JSONField(_("environment variables"), default=dict, blank=True)
    env_secrets = EncryptedTextField(_("secret environment variables"), blank=True)
    timeout_seconds = models.FloatField(
        _("call timeout (seconds)"), default=15.0, validators=[MinValueValidator(1.0), MaxValueValidator(300.0)]
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    contract_mode = models.CharField(
        _("contract mode"), max_length=12, choices=ContractMode.choices, blank=True,
        help_text=_("Strict: any breach of the contract blocks. Compatible: what the gateway can enforce itself "
                    "(closing an open schema, text results, plain errors, suggested verbs) only warns. "
                    "Left empty, the first sync chooses."),
    )

    protocol_version = models.CharField(_("protocol"), max_length=20, blank=True)
    is_legacy = models.BooleanField(_("legacy protocol"), default=False)
    discover_result = models.JSONField(null=True, blank=True)
    server_info = models.JSONField(null=True, blank=True)

    sync_status = models.CharField(max_length=10, choices=SyncStatus.choices, default=SyncStatus.NEVER)
    # Why the last sync failed, as a code and its parameters (tools.texts), so each reader sees
    # it in their own language (A3); empty when it did not fail.
    sync_error_code = models.TextField(blank=True)
    sync_error_params = models.JSONField(default=dict, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    # The tools/list pages the stored catalog was read from (sha256 of each body, its item count
    # and next cursor) and the key of everything else it was judged with (tools.sync): a sync
    # whose reads answer those very bytes in the same context changes nothing, and parses
    # nothing (P2). Empty when the last sync's reads differed or were not plain JSON.
    listing_seal = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(name="server_slug_snake_case", condition=models.Q(slug__regex=SERVER_SLUG_PATTERN)),
        ]

    def __str__(self):
        return self.slug

    @property
    def headers(self) -> dict:
        return json.loads(self.auth_headers) if self.auth_headers else {}

    @property
    def secret_env(self) -> dict:
        return json.loads(self.env_secrets) if self.env_secrets else {}

    @property
    def secret_values(self) -> dict:
        """Every secret this server was configured with (auth headers and secret variables),
        labelled, for the redaction of anything it sends back (T7)."""
        return {**self.headers, **{f"env:{name}": value for name, value in self.secret_env.items()}}

    @property
    def sync_error(self) -> str:
        """Why the last sync failed, in the active language ("" when it did not)."""
        return render_text(self.sync_error_code, self.sync_error_params) if self.sync_error_code else ""


class CatalogVersion(models.Model):
    """One sync of one server (M5): what changed against the previous version, and what the
    sync noticed about the server as a whole (order changes, legacy protocol)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    tool_count = models.PositiveIntegerField(default=0)
    diff = models.JSONField(default=dict)  # {"added": [...], "removed": [...], "changed": [{"name", "fields"}]}
    # [{"rule", "severity", "message_code", "message_params", "hint_code", "hint_params"}]; versions
    # stored before codes hold {"rule", "severity", "texts": {language: {"message", "hint"}}}.
    server_finding_codes = models.JSONField(default=list)
    # The admin's overlays at this version, tool name → overlay (see Tool.overlay): with the
    # server's definitions of the same sync, what each tool's effective definition was made of.
    overlays = models.JSONField(default=dict, blank=True)
    contract_mode = models.CharField(max_length=12, blank=True)

    class Meta:
        ordering = ["server", "-number"]
        constraints = [models.UniqueConstraint(fields=["server", "number"], name="catalog_version_unique_number")]

    @property
    def has_changes(self):
        return any(self.diff.get(key) for key in ("added", "removed", "changed"))

    @property
    def server_findings(self) -> list[dict]:
        """What the sync noticed about the server: rule, severity, message and hint in the active
        language, and `texts` in every shipped language (what pages written before codes read)."""
        shown = []
        for entry in self.server_finding_codes:
            texts = {}
            for language, _name in settings.LANGUAGES:
                with translation.override(language):
                    texts[language] = {"message": _entry_text(entry, "message"), "hint": _entry_text(entry, "hint")}
            shown.append({
                "rule": entry.get("rule", ""), "severity": entry.get("severity", ""),
                "message": _entry_text(entry, "message"), "hint": _entry_text(entry, "hint"), "texts": texts,
            })
        return shown


def _entry_text(entry: dict, part: str) -> str:
    """One part of a stored finding in the active language: from its code, or, for what was
    stored before codes, from its text in the reader's language (else the default one)."""
    code = entry.get(f"{part}_code")
    if code:
        return render_text(code, entry.get(f"{part}_params"))
    texts = entry.get("texts") or {}
    language = (translation.get_language() or settings.LANGUAGE_CODE)[:2]
    chosen = texts.get(language) or texts.get(settings.LANGUAGE_CODE) or {}
    return chosen.get(part, "")


class Tool(models.Model):
    """One tool of one server, with its full definition as the server sent it (M5)."""

    class Level(models.TextChoices):
        READ = "read", _("read")
        WRITE = "write", _("write")
        DESTRUCTIVE = "destructive", _("destructive")

    class Certification(models.TextChoices):
        PENDING = "pending", _("pending certification")
        CERTIFIED = "certified", _("certified")
        BLOCKED = "blocked", _("blocked")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(_("name"), max_length=200)
    prefixed_name = models.CharField(_("name the model sees"), max_length=250)
    position = models.PositiveIntegerField()
    # The effective definition: the server's, plus the admin's overlay, plus what the gateway
    # adds in compatible mode (a closed inputSchema, suggested `_meta`). What certification,
    # the gateway and the model read (tools.overlays).
    definition = models.JSONField()
    definition_hash = models.CharField(max_length=64)
    # The definition exactly as the server sent it, and its hash (what a sync compares).
    server_definition = models.JSONField(default=dict)
    server_hash = models.CharField(max_length=64, blank=True)
    # What the admin adds or overrides in Asixto, never on the server: {"verb", "capabilities",
    # "description", "level", "level_set_by", "level_set_at", "updated_by", "updated_at"}.
    overlay = models.JSONField(default=dict, blank=True)
    level = models.CharField(_("level"), max_length=12, choices=Level.choices)
    certification = models.CharField(max_length=10, choices=Certification.choices, default=Certification.PENDING)
    certified_hash = models.CharField(max_length=64, blank=True)
    certified_at = models.DateTimeField(null=True, blank=True)
    # What the verdict was computed from (the server's definition hash, the overlay, the contract
    # mode, the tenant's language and scenarios, the slug, the size limit, the rules; see
    # certification): a sync certifies a tool again only when this would change.
    certification_basis = models.CharField(max_length=64, blank=True)
    # The definition the last live probe (C8, C9) judged; its findings stand while it is current.
    probed_hash = models.CharField(max_length=64, blank=True)
    probed_at = models.DateTimeField(null=True, blank=True)
    enabled = models.BooleanField(_("enabled by the admin"), default=True)
    sample_arguments = models.JSONField(_("sample arguments for live probes"), null=True, blank=True)
    added_in = models.ForeignKey(CatalogVersion, null=True, on_delete=models.SET_NULL, related_name="+")
    changed_in = models.ForeignKey(CatalogVersion, null=True, on_delete=models.SET_NULL, related_name="+")
    # Removed tools stay (call records point at them) but are out of the catalog.
    removed_in = models.ForeignKey(CatalogVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["server__slug", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["server", "name"], condition=models.Q(removed_in__isnull=True), name="tool_unique_live_name"
            ),
            # What the gateway looks tools up by (M6). Follows from the slug rule and the
            # constraint above; kept as the database's own guarantee.
            models.UniqueConstraint(
                fields=["prefixed_name"], condition=models.Q(removed_in__isnull=True), name="tool_unique_live_prefixed_name"
            ),
        ]

    def __str__(self):
        return self.prefixed_name

    @property
    def is_available_to_agents(self):
        """Certified for this exact definition, enabled, on an enabled server, still listed (C, M5)."""
        return (
            self.removed_in_id is None
            and self.enabled
            and self.server.enabled
            and self.certification == self.Certification.CERTIFIED
            and self.certified_hash == self.definition_hash
        )


class Finding(models.Model):
    """A certification finding (C1–C9, M4, M6): on a tool, or on the server as a whole."""

    class Severity(models.TextChoices):
        BLOCKING = "blocking", _("blocking")
        WARNING = "warning", _("warning")

    class Source(models.TextChoices):
        DEFINITION = "definition", _("definition")
        PROBE = "probe", _("live probe")
        SERVER = "server", _("server")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="findings")
    tool = models.ForeignKey(Tool, null=True, blank=True, on_delete=models.CASCADE, related_name="findings")
    rule = models.CharField(max_length=40)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    # Message and hint as codes and parameters (tools.texts), rendered in the reader's language
    # when read (A3).
    message_code = models.TextField(blank=True)
    message_params = models.JSONField(default=dict, blank=True)
    hint_code = models.TextField(blank=True)
    hint_params = models.JSONField(default=dict, blank=True)
    # Findings stored before codes: {"es": {"message": ..., "hint": ...}, "en": {...}}.
    texts = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.DEFINITION)
    # For probe findings: the definition the probe judged. They stand while it is the tool's.
    definition_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["severity", "rule"]

    def _text(self, part):
        return _entry_text({
            f"{part}_code": getattr(self, f"{part}_code"), f"{part}_params": getattr(self, f"{part}_params"),
            "texts": self.texts,
        }, part)

    @property
    def message(self):
        return self._text("message")

    @property
    def hint(self):
        return self._text("hint")


class ToolCall(models.Model):
    """One call through the gateway (G9): who asked, what was sent, what came back, how long it
    took. Arguments are the customer's data and stay in the tenant's schema; auth headers and
    other secrets never reach this table."""

    class Outcome(models.TextChoices):
        OK = "ok", _("ok")
        BUSINESS_ERROR = "business_error", _("business error")
        TIMEOUT = "timeout", _("timeout")
        DROPPED = "dropped", _("connection dropped")
        CONNECT_ERROR = "connect_error", _("connection refused")
        HTTP_ERROR = "http_error", _("HTTP error")
        PROTOCOL_ERROR = "protocol_error", _("protocol error")
        INVALID_OUTPUT = "invalid_output", _("invalid output")
        UNSUPPORTED_RESULT = "unsupported_result", _("unsupported result")
        INVALID_ARGUMENTS = "invalid_arguments", _("invalid arguments")
        TOO_LARGE = "too_large", _("result too large")
        REFUSED = "refused", _("refused by policy")
        UNAVAILABLE = "unavailable", _("tool unavailable")
        # Sent, and the process making the call ended before its answer was recorded (gateway/journal.py)
        INTERRUPTED = "interrupted", _("interrupted")

    class Source(models.TextChoices):
        TURN = "turn", _("agent turn")
        CONSOLE = "console", _("test console")
        PROBE = "probe", _("certification probe")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No database constraint: records are written in batches after the call (gateway.records),
    # and a tool removed in between must not cost its records.
    tool = models.ForeignKey(Tool, null=True, on_delete=models.SET_NULL, related_name="calls", db_constraint=False)
    tool_name = models.CharField(max_length=250)  # the prefixed name, kept if the tool goes away
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.TURN)
    turn_id = models.UUIDField(null=True, blank=True, db_index=True)
    conversation_id = models.CharField(max_length=100, blank=True)
    channel = models.CharField(max_length=20)
    idempotency_key = models.CharField(max_length=200)
    request_ids = models.JSONField(default=list)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(db_index=True)
    duration_ms = models.FloatField(default=0)
    outcome = models.CharField(max_length=20, choices=Outcome.choices, db_index=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)  # English, for logs and operators
    # What went wrong as a stable code and plain values (tools.mcp.errors), so each reader sees
    # it in their own language (A3); empty for failures that are not the server's.
    error_code = models.CharField(max_length=40, blank=True, default="")
    error_params = models.JSONField(default=dict, blank=True)
    arguments = models.JSONField(default=dict)
    result_chars = models.PositiveIntegerField(default=0)
    model_chars = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(default=False)
    violations = models.JSONField(default=list)  # [{"kind": ..., "detail": ...}], contract breaches
    # Exactly what the model read, and the server's structured result with leaks and secrets
    # cleaned out (bounded: gateway.call.bounded_result); each attempt's time in ms (G9).
    model_text = models.TextField(blank=True, default="")
    result = models.JSONField(null=True, blank=True)
    attempt_ms = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["tool", "-started_at"])]

    def __str__(self):
        return f"{self.tool_name} {self.outcome}"

    @property
    def error_text(self):
        """The error in the active language when it has a code, else the stored text."""
        if not self.error_code:
            return self.error
        from tools.mcp.errors import render_error  # the connection layer loads the MCP SDK

        return render_error(self.error_code, self.error_params)


class RoutingExample(models.Model):
    """What a tenant teaches pre-routing (R6): a customer request that one of its tools serves, or
    one that needs no tool (`tool_name` empty). An admin's sample request of a tool (its overlay) or
    support's correction of a turn's routing (with the turn). Keyed by the name the model sees, so
    examples outlive catalog versions; routing skips those of tools no longer in the catalog."""

    class Source(models.TextChoices):
        ADMIN = "admin", _("sample request")
        CORRECTION = "correction", _("correction")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tool_name = models.CharField(_("tool"), max_length=250, blank=True)  # "" = no tool
    text = models.TextField(_("text"), max_length=500)
    source = models.CharField(_("source"), max_length=12, choices=Source.choices)
    created_by = models.CharField(_("by"), max_length=150)
    created_at = models.DateTimeField(_("when"), auto_now_add=True)
    turn_id = models.UUIDField(null=True, blank=True)  # the corrected turn (runtime.Turn)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["tool_name", "source"])]

    def __str__(self):
        return f"{self.tool_name or '-'}: {self.text[:40]}"
