"""Engram settings: every value comes from the environment, with defaults for local use.

With no configuration Engram runs embedded: SQLite in the data directory, a filesystem Celery
transport (a real worker and beat, no Redis). Set DATABASE_URL and REDIS_URL for production.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

from lib import paths

BASE_DIR = Path(__file__).resolve().parent.parent

# The one secret anyone can read in this file; refused when DEBUG is off.
DEVELOPMENT_SECRET_KEY = "engram-development-secret-do-not-use-in-production"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def database_from_url(url: str, data_dir: Path) -> dict[str, object]:
    """Translate a DATABASE_URL (sqlite:///path, postgres://user:pass@host:port/name) to Django."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    if scheme == "sqlite":
        # sqlite:///relative.db (from the current directory) and sqlite:////absolute.db, as in
        # dj-database-url: an installed package has no checkout to be relative to.
        raw_path = unquote(parsed.path)[1:] if parsed.path.startswith("/") else parsed.path
        path = Path(raw_path).absolute() if raw_path else data_dir / "engram.sqlite3"
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            "OPTIONS": {
                # WAL lets the web process read while the worker writes; IMMEDIATE avoids
                # "database is locked" on lock upgrades inside transactions.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            "TEST": {"NAME": str(data_dir / "test-engram.sqlite3")},
        }
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parsed.path.lstrip("/")) or "engram"
        # A database that does not answer fails a request within seconds (503), never hangs
        # a hook past its timeout.
        options: dict[str, object] = {
            "connect_timeout": env_int("DB_CONNECT_TIMEOUT", 3, minimum=1)
        }
        query = parse_qs(parsed.query)
        if "sslmode" in query:
            options["sslmode"] = query["sslmode"][0]
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60, minimum=0),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL must start with sqlite:// or postgres://, got {parsed.scheme or url!r}"
    )


# --- Core ---------------------------------------------------------------------------------

# ENGRAM_DATA_DIR, else a per-user folder (~/.local/share/engram on Linux): an installed
# package has no checkout to keep data in. `make run` sets ./data.
DATA_DIR = paths.data_dir()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    explicit = os.environ.get("SECRET_KEY", "").strip()
    if explicit:
        return explicit
    # The run script writes a random key here on first start, so the embedded mode needs no
    # configuration and never runs on the public development key.
    key_file = DATA_DIR / paths.SECRET_KEY_FILE
    if key_file.exists():
        stored = key_file.read_text().strip()
        if stored:
            return stored
    return DEVELOPMENT_SECRET_KEY


SECRET_KEY = _secret_key()
if not DEBUG and SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    raise ImproperlyConfigured(
        "DEBUG is off but SECRET_KEY is the development key. Set SECRET_KEY (or run "
        "`engram run` or `make run`, which write a random key to the data directory), or set "
        "DEBUG=1 for local development."
    )

ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "memory",
    "exchange",
    "patterns",
    "dialectic",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memory.api.middleware.ApiGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "engramsite.urls"
WSGI_APPLICATION = "engramsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Every template lives in its app's templates/ folder (base.html and the login page in
        # memory's), so an installed wheel carries them; no folder outside the packages.
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------------

DATABASE_URL = os.environ.get("DATABASE_URL", "").strip() or "sqlite:///" + str(
    DATA_DIR / "engram.sqlite3"
)
DATABASES = {"default": database_from_url(DATABASE_URL, DATA_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth and security --------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "memory:home"
LOGOUT_REDIRECT_URL = "login"

SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
if env_bool("USE_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True

# Request bodies above this are refused (413) before they are parsed.
ENGRAM_MAX_BODY_BYTES = env_int("ENGRAM_MAX_BODY_BYTES", 2 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = ENGRAM_MAX_BODY_BYTES

# --- Static files -------------------------------------------------------------------------

STATIC_URL = "static/"
# Static files (CSS, JS, the vendored htmx) live in memory/static/, found by the app finder, so
# an installed wheel serves them too.
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", str(DATA_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

# --- Celery -------------------------------------------------------------------------------

REDIS_URL = os.environ.get("REDIS_URL", "").strip()
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip() or REDIS_URL
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "").strip() or REDIS_URL
BROKER_DIR = DATA_DIR / "broker"
if not CELERY_BROKER_URL:
    # Embedded mode: kombu's filesystem transport, shared by web, worker and beat through
    # the data directory. No server to install, and tasks still run in a real worker.
    CELERY_BROKER_URL = "filesystem://localhost//"  # with a host: kombu warns without one
    # kombu's, with each message written whole before it is in the queue (engramsite/broker.py)
    CELERY_BROKER_TRANSPORT = "engramsite.broker:Transport"
    for sub in ("queue", "processed", "results", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        # Seconds between two looks at the queue folder when the worker finds it empty; with
        # one task prefetched that is also after every task: at 0.5 s a worker drained ~2 tasks
        # a second and attribution lagged minutes behind 8 agents (bench/load.py: 166 s to
        # drain a 26 s run; 11 s at 0.1 s). A look at an empty folder costs microseconds.
        "polling_interval": env_float("ENGRAM_BROKER_POLL_SECONDS", 0.1),
    }
if not CELERY_RESULT_BACKEND:
    CELERY_RESULT_BACKEND = "file://" + str(BROKER_DIR / "results")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Periodic jobs (seconds between runs); every one is idempotent.
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "refresh-bands": {"task": "engram.refresh_bands", "schedule": 3600.0},
    "reembed-stale": {"task": "engram.reembed_stale", "schedule": 3600.0},
    "abstraction-prompts": {"task": "engram.refresh_abstraction_prompts", "schedule": 6 * 3600.0},
    "exchange-refresh-fitness": {"task": "exchange.refresh_fitness", "schedule": 6 * 3600.0},
    "exchange-expire-trials": {"task": "exchange.expire_trials", "schedule": 3600.0},
    "maintenance": {"task": "engram.maintain", "schedule": 24 * 3600.0},
    "patterns-age": {"task": "patterns.age", "schedule": 6 * 3600.0},
    "patterns-evolve-prompts": {"task": "patterns.evolve_prompts", "schedule": 24 * 3600.0},
    "dialectic-consolidate": {"task": "dialectic.consolidate", "schedule": 900.0},
    # Work whose task never ran (broker down when it was queued, a worker killed): recovered.
    "sweep-pending": {"task": "engram.sweep_pending", "schedule": 120.0},
}

# --- Engram -------------------------------------------------------------------------------

ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "").strip()
ENGRAM_LLM_MODEL = os.environ.get("ENGRAM_LLM_MODEL", "claude-sonnet-4-6")
# Tokens (in + out) each owner may spend on Claude per UTC day; past it, the fallbacks run.
ENGRAM_LLM_DAILY_TOKENS = env_int("ENGRAM_LLM_DAILY_TOKENS", 200_000, minimum=0)
# Seconds per request and retries on 429/5xx (with the SDK's backoff) before a fallback runs.
ENGRAM_LLM_TIMEOUT = env_float("ENGRAM_LLM_TIMEOUT", 20.0)
ENGRAM_LLM_RETRIES = env_int("ENGRAM_LLM_RETRIES", 2, minimum=0)
# Another Messages API endpoint (a proxy or gateway); empty: Anthropic's.
ENGRAM_LLM_BASE_URL = os.environ.get("ENGRAM_LLM_BASE_URL", "").strip()
ENGRAM_OWNER_USERNAME = os.environ.get("ENGRAM_OWNER_USERNAME", "owner")
# Texts embedded at once by a batch (one worker thread each); a separate pool as large embeds
# queries (one thread per query, while its lexical leg runs).
ENGRAM_EMBEDDER_THREADS = env_int("ENGRAM_EMBEDDER_THREADS", min(2, os.cpu_count() or 1), minimum=1)
# Requests per minute per token; kept in Redis when configured, in-process otherwise.
# Sized for a heavy local user: 50 busy agents and their subagents on one token, hooks on every
# tool call, reach ~200 requests/s (bench/load.py); 6,000 refused a third of that. It stays as
# protection against a runaway client. Refusals are counted per token.
ENGRAM_RATE_LIMIT_PER_MINUTE = env_int("ENGRAM_RATE_LIMIT_PER_MINUTE", 20000, minimum=1)
# Behaviour profile v1 constants (DESIGN.md); every one can be overridden from the environment.
ENGRAM_DECAY_BASE = env_float("ENGRAM_DECAY_BASE", 0.05)
ENGRAM_RS_FLOOR = env_float("ENGRAM_RS_FLOOR", 0.05)
ENGRAM_INJECT_BUDGET_TOKENS = env_int("ENGRAM_INJECT_BUDGET_TOKENS", 2000, minimum=100)
ENGRAM_RETENTION_DAYS = env_int("ENGRAM_RETENTION_DAYS", 90, minimum=1)
# Files a hook names are read only under these folders (os.pathsep-separated, after realpath):
# Claude Code transcripts, and the projects whose CLAUDE.md / .claude/rules/ are read.
ENGRAM_TRANSCRIPT_DIRS = [
    d for d in os.environ.get("ENGRAM_TRANSCRIPT_DIRS", "").split(os.pathsep) if d.strip()
] or ["~/.claude/projects"]
ENGRAM_PROJECT_ROOTS = [
    d for d in os.environ.get("ENGRAM_PROJECT_ROOTS", "").split(os.pathsep) if d.strip()
] or ["~"]
ENGRAM_MAX_TRANSCRIPT_BYTES = env_int(
    "ENGRAM_MAX_TRANSCRIPT_BYTES", 256 * 1024 * 1024, minimum=1024 * 1024
)
# Passphrase that encrypts each owner's exchange private key at rest (scrypt + AES-256-GCM).
# Empty: derived from SECRET_KEY, so rotating SECRET_KEY then locks the identity; set this to
# keep the exchange identity independent of the Django secret.
ENGRAM_EXCHANGE_KEY = os.environ.get("ENGRAM_EXCHANGE_KEY", "").strip()
if not DEBUG and ENGRAM_EXCHANGE_KEY == DEVELOPMENT_SECRET_KEY:
    raise ImproperlyConfigured("ENGRAM_EXCHANGE_KEY must not be the development secret key.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
