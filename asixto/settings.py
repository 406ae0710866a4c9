"""Django settings for Asixto: one file, read from the environment, runnable with zero configuration.

Every knob has a default that works on a developer machine (PostgreSQL and Redis on 127.0.0.1);
production sets the environment variables listed in the README.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name, default=False):
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def envint(name, default):
    return int(os.environ.get(name, default))


def envlist(name, default=""):
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = envbool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "asixto-development-only-secret-key-change-me-in-production")
# Fernet keys for secrets at rest (T7), newest first; by default one derived from SECRET_KEY.
ASIXTO_ENCRYPTION_KEYS = envlist("ASIXTO_ENCRYPTION_KEYS")
# Development and tests only: lets tenants register MCP servers on loopback/private hosts (M2).
ASIXTO_ALLOW_PRIVATE_HOSTS = envbool("ASIXTO_ALLOW_PRIVATE_HOSTS", False)
# How many MCP servers a tenant may register unless an operator set its own quota.
ASIXTO_DEFAULT_SERVER_QUOTA = envint("ASIXTO_DEFAULT_SERVER_QUOTA", 20)
# Fair share between tenants (issue 19, M4): a tenant's turns waiting or running at once, and the
# messages a channel key may post a minute (a token bucket in Redis); operators set either per tenant.
# A quarter of the slots `./run` gives a worker (CELERY_CONCURRENCY 200): one tenant alone never holds them all.
ASIXTO_TURNS_IN_FLIGHT_LIMIT = envint("ASIXTO_TURNS_IN_FLIGHT_LIMIT", 50)
ASIXTO_MESSAGES_PER_MINUTE = envint("ASIXTO_MESSAGES_PER_MINUTE", 600)
ASIXTO_BUSY_RETRY_SECONDS = 5  # the Retry-After of a message refused for turns in flight
# The most one tool call may read from an MCP server; a longer answer is refused (`too_large`).
ASIXTO_MAX_RESULT_BYTES = envint("ASIXTO_MAX_RESULT_BYTES", 1024 * 1024)
# Long-lived stdio MCP sessions (tools/mcp/stdio_pool.py), per process: closed after this many
# idle seconds; at most this many live (least recently used closed first); calls at once on one.
ASIXTO_STDIO_IDLE_SECONDS = envint("ASIXTO_STDIO_IDLE_SECONDS", 300)
ASIXTO_STDIO_MAX_SESSIONS = envint("ASIXTO_STDIO_MAX_SESSIONS", 32)
ASIXTO_STDIO_MAX_CALLS_PER_SESSION = envint("ASIXTO_STDIO_MAX_CALLS_PER_SESSION", 16)
# The domain tenant subdomains hang from: `<slug>.<ASIXTO_BASE_DOMAIN>`.
ASIXTO_BASE_DOMAIN = os.environ.get("ASIXTO_BASE_DOMAIN", "localhost")
# How links in e-mails (invitations, password links) reach a tenant's dashboard: its primary
# domain with this scheme and port (empty: the scheme's default), never the request's Host.
ASIXTO_DASHBOARD_SCHEME = os.environ.get("ASIXTO_DASHBOARD_SCHEME", "http")
ASIXTO_DASHBOARD_PORT = os.environ.get("ASIXTO_DASHBOARD_PORT", "")
# stdio MCP servers (tools.stdio_launch): where each tenant server's private `{workdir}` lives,
# and, when the platform runs as root, the first of the uids they run as (one per server; empty:
# all share ASIXTO_STDIO_USER).
ASIXTO_STDIO_ROOT = os.environ.get("ASIXTO_STDIO_ROOT") or str(BASE_DIR / "var" / "stdio")
# Each process notes the tool-call attempts it sends here before sending them, so that a process killed
# before their records are stored leaves them named (tools/gateway/journal.py). Per host.
ASIXTO_CALL_JOURNAL = envbool("ASIXTO_CALL_JOURNAL", True)
ASIXTO_CALL_JOURNAL_DIR = os.environ.get("ASIXTO_CALL_JOURNAL_DIR") or str(BASE_DIR / "var" / "call-journal")
_stdio_uid_base = os.environ.get("ASIXTO_STDIO_UID_BASE", "200000").strip()
ASIXTO_STDIO_UID_BASE = int(_stdio_uid_base) if _stdio_uid_base else None
# As root, stdio servers are fenced off the platform's PostgreSQL and Redis (iptables on their
# uids, their sockets hidden: tools/mcp/fence.py); 0 runs them unfenced (issue 19).
ASIXTO_STDIO_FENCE = envbool("ASIXTO_STDIO_FENCE", True)

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "*")
# Origins allowed to post forms to a dashboard besides the dashboard's own, which Django always
# accepts (it compares Origin with Host). Empty by default: a wildcard such as
# "https://*.<base domain>" would let one tenant's subdomain post to another's dashboard (T1).
# Set it only for a front end on another origin, and never with a wildcard over tenant domains.
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

SHARED_APPS = [
    "django_tenants",
    "accounts",
    "tenants",
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.admin",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Sign-in throttling (accounts.throttling). Its cache handler keeps no rows; the app is
    # installed in the public schema only, for its models' imports.
    "axes",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
]
# Users and sessions live in each tenant's schema too: a dashboard user of tenant A does not
# exist on tenant B's domain, and a session cookie cannot cross tenants (T1, T4).
TENANT_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "accounts",
    "tools",
    "runtime",
]
INSTALLED_APPS = list(SHARED_APPS) + [app for app in TENANT_APPS if app not in SHARED_APPS]

TENANT_MODEL = "tenants.Tenant"
TENANT_DOMAIN_MODEL = "tenants.Domain"
PUBLIC_SCHEMA_URLCONF = "asixto.urls_public"
ROOT_URLCONF = "asixto.urls"
AUTH_USER_MODEL = "accounts.User"

MIDDLEWARE = [
    # First: /healthz, /readyz and /metrics on the platform's host, answered before the tenant
    # middleware reads the database to resolve the host (issue 21).
    "asixto.health.ProbeMiddleware",
    "asixto.metrics_view.MetricsMiddleware",
    "tenants.middleware.TenantMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes requires: turns a lockout into accounts.throttling's 429 page.
    "axes.middleware.AxesMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "asixto.wsgi.application"

# Connections come from a bounded pool per process (psycopg_pool through Django): a threaded
# server or a busy worker reuses a few connections instead of opening one per thread until
# PostgreSQL refuses. Every process holds at most DB_POOL_MAX_SIZE connections (a web worker
# needs its threads + 1 for the call-record writer); DB_POOL_MAX_SIZE=0 turns the pool off
# (for an external session-mode pooler), and DB_CONN_MAX_AGE then applies. The backend is
# django-tenants' (tenants/database/): it sets search_path on a connection taken from the pool
# only when the connection's session has another one.
DB_POOL_MAX_SIZE = envint("DB_POOL_MAX_SIZE", 10)
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/asixto"),
        conn_max_age=0 if DB_POOL_MAX_SIZE else envint("DB_CONN_MAX_AGE", 0),
        conn_health_checks=True,
        engine="tenants.database",
    )
}
if DB_POOL_MAX_SIZE:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(envint("DB_POOL_MIN_SIZE", 1), DB_POOL_MAX_SIZE),
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": envint("DB_POOL_TIMEOUT", 30),  # seconds a request waits for a free connection
        "max_idle": 300,
    }
DATABASE_ROUTERS = ["django_tenants.routers.TenantSyncRouter"]
# A new tenant's schema is a copy of a migrated template schema (tenants/schema_template.py, P5):
# a fraction of the time of running every migration. `migrate_schemas` keeps the template current
# (the executor below) and tenant creation rebuilds it first if it is behind the code.
# ASIXTO_TENANT_CLONE=0 migrates each new schema instead, as django-tenants does by default.
ASIXTO_TENANT_CLONE = envbool("ASIXTO_TENANT_CLONE", True)
ASIXTO_TENANT_TEMPLATE_SCHEMA = "asixto_template"
GET_EXECUTOR_FUNCTION = "tenants.schema_template.migration_executor"
# Set the schema search_path when it changes, not before every query (half the round trips).
TENANT_LIMIT_SET_CALLS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        # Cache keys carry the tenant schema so no tenant ever reads another's entry (T1).
        "KEY_FUNCTION": "django_tenants.cache.make_key",
        "REVERSE_KEY_FUNCTION": "django_tenants.cache.reverse_key",
        # JSON and bytes, never pickle: a value written into Redis is data, not code (issue 19).
        "OPTIONS": {"serializer": "asixto.cache.Serializer"},
    }
}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
if CELERY_BROKER_URL.startswith("redis://"):
    CELERY_BROKER_TRANSPORT = "asixto.broker:Transport"  # kombu's, with fewer Redis clients (P4)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_ACCEPT_CONTENT = ["json"]  # no pickle from the broker or the result store (issue 19)
# tenant-schemas-celery reads the task's Tenant row before every task; a worker keeps it this many
# seconds instead (P4: a row read and a model built per turn). A change to a tenant's settings
# (model endpoint, key, budgets, instructions) reaches tasks within this bound.
CELERY_TASK_TENANT_CACHE_SECONDS = envint("ASIXTO_WORKER_TENANT_CACHE_SECONDS", 5)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "dashboard:login"
# Paths, not URL names: the operators' admin signs in and out on the platform domain, where the
# dashboard's names do not exist. "/" is the dashboard's home on a tenant domain.
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# Sign-in throttling (T4), django-axes: failures counted in Redis per account and per address,
# per tenant (the cache key carries the schema); at the limit even the right password waits
# out the cool-off. See accounts/throttling.py.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_FAILURE_LIMIT = envint("ASIXTO_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=envint("ASIXTO_LOGIN_COOLOFF_MINUTES", 15))
# Tries during a lockout neither count nor extend it: the person who keeps trying the right
# password gets in when the cool-off ends, and a guesser still gets at most the limit per cool-off.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_USERNAME_CALLABLE = "accounts.throttling.tracked_username"
AXES_CLIENT_IP_CALLABLE = "accounts.throttling.client_address"
AXES_LOCKOUT_CALLABLE = "accounts.throttling.lockout_response"
AXES_ENABLE_ADMIN = False  # nothing to show: the counters live in Redis
AXES_VERBOSE = False
# How many reverse proxies (load balancers) sit in front of the web servers: the client's
# address is then taken from X-Forwarded-For. 0 (default): the peer address is the client.
ASIXTO_TRUSTED_PROXIES = envint("ASIXTO_TRUSTED_PROXIES", 0)
# E-mail (invitations and password links, T4): printed on the console unless an SMTP server
# is configured (EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and EMAIL_HOST…).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 10)  # seconds: a slow mail server must not hang a request
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Asixto <no-reply@localhost>")
# How long an invitation or password link works.
PASSWORD_RESET_TIMEOUT = envint("ASIXTO_PASSWORD_LINK_SECONDS", 3 * 24 * 3600)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# Interface text: Spanish by default, English shipped (A3).
LANGUAGE_CODE = "es"
LANGUAGES = [("es", "Español"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# One date format on every page, per language (asixto/formats/<language>/formats.py).
FORMAT_MODULE_PATH = ["asixto.formats"]
USE_I18N = True
TIME_ZONE = "UTC"
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Served by whitenoise from the app itself: no CDN, the product works offline.
WHITENOISE_USE_FINDERS = True

# Uploads and JSON bodies: the API rejects anything larger than this (A4).
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenants.api.auth.IsAdminKey"],
    "DEFAULT_PARSER_CLASSES": ["asixto.api.JsonBodyParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "asixto.api.ListPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "asixto.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "asixto.api_schema.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Asixto API",
    "DESCRIPTION": (
        "Channel and admin API of Asixto. Authenticate with `Authorization: Bearer <API key>` "
        "(in these docs: **Authorize**, then *Try it out*)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # One name per set of choices where two fields share a name (the schema must build without a
    # warning: tests/tenants/test_api_schema.py).
    "ENUM_NAME_OVERRIDES": {
        "ApiKeyScopeEnum": "tenants.models.ApiKey.Scope",
        "NewApiKeyScopeEnum": ["channel", "admin"],
        "UserRoleEnum": "accounts.models.User.Role",
        "ChannelEnum": ["chat", "voice"],
        "ToolLevelEnum": "tools.models.Tool.Level",
    },
    "GET_LIB_DOC_EXCLUDES": "asixto.api.schema_doc_excludes",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums", "asixto.api.without_requirement_ids",
        "asixto.api_schema.document_error_responses",
    ],
    # "Try it out" keeps the key between reloads of the docs.
    "SWAGGER_UI_SETTINGS": {"persistAuthorization": True},
}

# Log lines as text (default) or, with ASIXTO_LOG_FORMAT=json, one JSON object each with the
# tenant, turn and trace id when known (asixto/logs.py); the worker and beat use the same
# formatter (asixto/celery.py).
ASIXTO_LOG_FORMAT = "json" if os.environ.get("ASIXTO_LOG_FORMAT", "").strip().lower() == "json" else "text"
# Periodic sweeps whose routine "sent", "received" and "succeeded" lines are DEBUG, not INFO (issue 20).
ASIXTO_QUIET_TASKS = ["runtime.tasks.webhook_outbox_sweep", "runtime.tasks.requeue_stalled_turns",
                      "runtime.tasks.deliver_due_scheduled", "tools.tasks.recover_interrupted_calls"]
LOGGING_CONFIG = "asixto.logs.configure"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "asixto.logs.JsonFormatter"}},
    "filters": {
        "expected_refusals": {"()": "asixto.logs.ExpectedRefusals"},
        "routine_tasks": {"()": "asixto.logs.RoutineTasks", "tasks": ASIXTO_QUIET_TASKS},
    },
    "handlers": {"console": {"class": "logging.StreamHandler",
                             **({"formatter": "json"} if ASIXTO_LOG_FORMAT == "json" else {})}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # A 403 or 404 is one warning line, without the traceback Django adds to it.
        "django.request": {"filters": ["expected_refusals"]},
        "celery.beat": {"filters": ["routine_tasks"]},
        "celery.worker.strategy": {"filters": ["routine_tasks"]},
        "celery.app.trace": {"filters": ["routine_tasks"]},
        "django.db.backends": {"level": "WARNING"},
        # One line per outbound HTTP request is noise; failures are reported by our own code.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
    },
}

# Agent runtime: the model endpoint's connect timeout and the deadline for a whole answer (R11);
# how long one turn's event stream stays open (clients resume with Last-Event-ID); how long a
# worker's claim on a turn lasts without a step before another may take the turn over (R10).
ASIXTO_MODEL_CONNECT_TIMEOUT = float(os.environ.get("ASIXTO_MODEL_CONNECT_TIMEOUT", 5))
ASIXTO_MODEL_TIMEOUT = float(os.environ.get("ASIXTO_MODEL_TIMEOUT", 60))
# Model requests sent again after a transient failure (a dropped or stale connection, 408, 409, 429,
# 5xx), within the same deadline (runtime/model_client.py): hosted APIs and their load balancers have these.
ASIXTO_MODEL_RETRIES = envint("ASIXTO_MODEL_RETRIES", 2)
ASIXTO_EVENT_STREAM_SECONDS = float(os.environ.get("ASIXTO_EVENT_STREAM_SECONDS", 120))
# Event streams open at once (runtime/stream_slots.py, issue 19 M3): per channel key, per tenant,
# and per threaded (WSGI) process, where each holds a thread: half of them by default.
ASIXTO_STREAMS_PER_KEY = envint("ASIXTO_STREAMS_PER_KEY", 20)
ASIXTO_STREAMS_PER_TENANT = envint("ASIXTO_STREAMS_PER_TENANT", 50)
ASIXTO_STREAMS_PER_PROCESS = envint("ASIXTO_STREAMS_PER_PROCESS", max(1, envint("WEB_THREADS", 8) // 2))
# Calls the web tier makes to a tenant's own systems while its request waits (the model test, an
# MCP server's prompts and resources, the console's invoke: up to 30 s each): at most this many at
# once per tenant, and per web process a quarter of its threads (asixto/web_calls.py).
ASIXTO_WEB_CALLS_PER_TENANT = envint("ASIXTO_WEB_CALLS_PER_TENANT", 2)
ASIXTO_WEB_CALLS_PER_PROCESS = envint("ASIXTO_WEB_CALLS_PER_PROCESS", max(1, envint("WEB_THREADS", 8) // 4))
# A worker's claim on a turn, renewed by its writes and, while it waits on a model or a tool, every
# ASIXTO_TURN_LEASE_RENEW_SECONDS by its process (runtime/lease_keeper.py; 0: only by writes, and
# then the lease must outlast the longest wait): a killed worker's turns are taken over after it, by
# the next sweep of stalled turns (every 20 s): within a minute by default, each lease renewed three times.
ASIXTO_TURN_LEASE_SECONDS = envint("ASIXTO_TURN_LEASE_SECONDS", 40)
ASIXTO_TURN_LEASE_RENEW_SECONDS = envint("ASIXTO_TURN_LEASE_RENEW_SECONDS", 12)
# A queued turn that the queue handed out this long before the sweep of stalled turns was sent, and
# that no worker claimed, lost its task and is sent again (runtime/turn.py, `stalled_turns_mark_resent`):
# it covers the moment between a worker taking a task and claiming its turn, and the hosts' clocks.
ASIXTO_TURN_PICKUP_SECONDS = envint("ASIXTO_TURN_PICKUP_SECONDS", 15)
# ...and whatever the queue says, a queued turn no worker picked up after this long is sent again.
ASIXTO_TURN_RESEND_SECONDS = envint("ASIXTO_TURN_RESEND_SECONDS", 300)
# A turn cut short by a passing database, Redis or broker failure runs again after this many
# seconds, up to ASIXTO_TURN_TRANSIENT_RUNS runs in all, instead of failing (issue 19); so is any
# task whose tenant could not be read as it started (asixto/celery.py).
ASIXTO_TURN_RETRY_SECONDS = envint("ASIXTO_TURN_RETRY_SECONDS", 5)
ASIXTO_TURN_TRANSIENT_RUNS = envint("ASIXTO_TURN_TRANSIENT_RUNS", 5)
# Webhooks: the pause before each retry of a failed delivery (seconds; one retry per entry), and
# the deadline for one attempt (connect, send, and the receiver's answer).
ASIXTO_WEBHOOK_RETRY_DELAYS = [float(d) for d in envlist("ASIXTO_WEBHOOK_RETRY_DELAYS", "1,5,30,120,600")]
ASIXTO_WEBHOOK_TIMEOUT = float(os.environ.get("ASIXTO_WEBHOOK_TIMEOUT", 10))
# Pre-routing (R6): on by default; the router call's deadline (a small model, a short answer).
ASIXTO_ROUTING = envbool("ASIXTO_ROUTING", True)
# Encodings of the routing check kept per process, per encoder, by their exact texts (runtime/routing/encoder.py;
# 0: none): 2048 calls of USE and of e5 are about 4 MB and 3 MB.
ASIXTO_ENCODING_CACHE = envint("ASIXTO_ENCODING_CACHE", 2048)
ASIXTO_ROUTER_TIMEOUT = float(os.environ.get("ASIXTO_ROUTER_TIMEOUT", 15))
# Public sources (R13): the web search backend (GET <url>?q=… → {"results": [{"title", "url", "snippet"}]}),
# and the bounds of reading one page.
ASIXTO_SEARCH_URL = os.environ.get("ASIXTO_SEARCH_URL", "")
ASIXTO_PAGE_TIMEOUT = envint("ASIXTO_PAGE_TIMEOUT", 10)
ASIXTO_PAGE_MAX_BYTES = envint("ASIXTO_PAGE_MAX_BYTES", 500_000)
# Languages the reply can be pinned to when the customer writes in one of them (R7).
ASIXTO_CUSTOMER_LANGUAGES = envlist("ASIXTO_CUSTOMER_LANGUAGES", "es,en,pt,fr,it,de")

# The periodic tasks, sent by the one `celery -A asixto beat` process (README, "Scaling out").
# The sweeps' periods can be shortened (tests/test_scale_out.py): a killed worker's turn is sent
# again at most ASIXTO_STALLED_SWEEP_SECONDS after its lease runs out, a turn whose task was lost at
# most that long after ASIXTO_TURN_PICKUP_SECONDS.
CELERY_BEAT_SCHEDULE = {
    "sync-all-servers": {"task": "tools.tasks.sync_all_servers", "schedule": envint("ASIXTO_SYNC_INTERVAL_SECONDS", 3600)},
    "requeue-stalled-turns": {"task": "runtime.tasks.requeue_stalled_turns",
                              "schedule": envint("ASIXTO_STALLED_SWEEP_SECONDS", 20)},
    # Tool calls a killed process sent and never recorded are recorded (issue 19, tools/gateway/journal.py).
    "recover-interrupted-calls": {"task": "tools.tasks.recover_interrupted_calls", "schedule": 60},
    # Webhook deliveries owed whose task was lost (a broker outage, a worker killed): issue 19.
    "webhook-outbox-sweep": {"task": "runtime.tasks.webhook_outbox_sweep",
                             "schedule": envint("ASIXTO_WEBHOOK_SWEEP_SECONDS", 30)},
    # Reminders and follow-ups that fell due are sent (R12, runtime/builtins/delivery.py).
    "deliver-due-scheduled": {"task": "runtime.tasks.deliver_due_scheduled",
                              "schedule": envint("ASIXTO_SCHEDULED_SWEEP_SECONDS", 30)},
}
# A server's listing is hostile input (M5): a sync reads at most this many tools (one more
# tells it there are more, and it fails, keeping the last catalog) ...
ASIXTO_MAX_TOOLS_PER_SERVER = envint("ASIXTO_MAX_TOOLS_PER_SERVER", 5000)
# ... and a definition larger than this (canonical JSON, bytes) is kept as its name and size,
# with a blocking finding.
ASIXTO_MAX_TOOL_DEFINITION_BYTES = envint("ASIXTO_MAX_TOOL_DEFINITION_BYTES", 32 * 1024)

# Prometheus metrics (asixto/metrics.py, README "Metrics"): off by default. On, `/metrics` on the
# platform's own domain serves them (with a bearer token when one is set), and every process
# writes its values under PROMETHEUS_MULTIPROC_DIR, which `./run` empties at start.
ASIXTO_METRICS = envbool("ASIXTO_METRICS", False)
ASIXTO_METRICS_TOKEN = os.environ.get("ASIXTO_METRICS_TOKEN", "")
ASIXTO_METRICS_MAX_TENANTS = envint("ASIXTO_METRICS_MAX_TENANTS", 200)
ASIXTO_METRICS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or str(BASE_DIR / "var" / "metrics")
# With traces on (OTEL_EXPORTER_OTLP_ENDPOINT), a span for each SQL statement of a kept trace
# (asixto/tracing.py; README "Traces").
ASIXTO_TRACE_SQL = envbool("ASIXTO_TRACE_SQL", False)
