"""Django settings for Asixto: one file, read from the environment, runnable with zero configuration.

Every knob has a default that works on a developer machine (PostgreSQL and Redis on 127.0.0.1);
production sets the environment variables listed in the README.
"""

import os
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
# The domain tenant subdomains hang from: `<slug>.<ASIXTO_BASE_DOMAIN>`.
ASIXTO_BASE_DOMAIN = os.environ.get("ASIXTO_BASE_DOMAIN", "localhost")

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "*")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "http://*.localhost:8000,http://localhost:8000")

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
# (for an external session-mode pooler), and DB_CONN_MAX_AGE then applies. django-tenants
# sets search_path again on every checkout (it forgets it when a connection goes back).
DB_POOL_MAX_SIZE = envint("DB_POOL_MAX_SIZE", 10)
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/asixto"),
        conn_max_age=0 if DB_POOL_MAX_SIZE else envint("DB_CONN_MAX_AGE", 0),
        conn_health_checks=True,
        engine="django_tenants.postgresql_backend",
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
    }
}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:home"
LOGOUT_REDIRECT_URL = "dashboard:login"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# Interface text: Spanish by default, English shipped (A3).
LANGUAGE_CODE = "es"
LANGUAGES = [("es", "Español"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
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
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "asixto.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Asixto API",
    "DESCRIPTION": "Channel and admin API of Asixto. Authenticate with `Authorization: Bearer <API key>`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # One line per outbound HTTP request is noise; failures are reported by our own code.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
    },
}

# Periodic catalog sync of every tenant's servers (M5); `celery -A asixto worker -B` runs it.
CELERY_BEAT_SCHEDULE = {
    "sync-all-servers": {"task": "tools.tasks.sync_all_servers", "schedule": envint("ASIXTO_SYNC_INTERVAL_SECONDS", 3600)},
}
