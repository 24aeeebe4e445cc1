"""The authorization server's pages: consent on the Board, the token, revocation and registration
endpoints, and the discovery documents (docs/guides/agents.md, "Connect with OAuth").

django-oauth-toolkit does the protocol (codes, PKCE, tokens, refresh rotation, RFC 9207 ``iss``,
registration); this module is what it leaves to the site:

- **Consent** (``/oauth/authorize/``): the Board's login first (its lockout, django-axes); then a
  page that names the client (its metadata document's or registration's ``client_name``, else
  its id) with its redirect host, lets the human pick one of the endpoints they manage (their
  own, and their teams' where they are an admin: ``oauth.endpoints_for_consent``, through
  ``switchboard.scope.managed_by``) and the scopes, and Allow or Deny, CSRF-checked. PKCE must
  be S256; a ``resource`` the client names must be one of this server's OAuth resources on an
  endpoint the human manages, and is then the endpoint; the token is bound to exactly that
  resource URL (RFC 8707). The redirect URI must match the client's registration exactly (the
  toolkit's check on the GET; on the POST, whose hidden field could be anything, checked again
  before any redirect, a Deny's included), and ``state`` goes back with the answer, an error
  included.
- **Errors** are RFC 6749's: a redirect carrying ``error=`` when the redirect URI is known good,
  else a JSON ``{"error", "error_description"}``, never an HTML page or a 500; what Django
  refuses before a view runs (a ``Host`` not in ``ALLOWED_HOSTS``) too, by the project's 400
  handler (``switchboard/views.py``, ``bad_request``).
- **Registration** (``/oauth/register/``, RFC 7591, kept for older clients): open, as chat apps
  need, but a redirect URI on a private, link-local or intranet address is refused (loopback
  allowed for native clients), and only the authorization code grant is registered; an update
  through the client's configuration URL (``/oauth/register/{client_id}/``, RFC 7592, with its
  registration access token, checked before the body) is refused the same way.
- **Discovery**: RFC 8414 metadata at ``/.well-known/oauth-authorization-server`` (the toolkit's
  view) and RFC 9728 protected-resource metadata for each resource, path-inserted
  (``/.well-known/oauth-protected-resource/mcp/{slug}/oauth`` and ``…/a2a/{slug}``), served for
  any well-formed slug so that it tells nobody which endpoints exist.

The token and registration endpoints are rate-limited per address before Django runs
(``DOOR`` in ``switchboard/asgi.py``'s route table, runtime setting ``oauth_rate_per_address``).
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from oauth2_provider import views as dot_views
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidRequestError

from switchboard import oauth
from switchboard.lib import frontdoor, jsonlimits, oauth_scopes
from switchboard.models import Endpoint

logger = logging.getLogger(__name__)

CONSENT_TEMPLATE = "oauth/consent.html"


def oauth_error(error: str, description: str, status: int = 400) -> JsonResponse:
    """An RFC 6749 §5.2 error body, never cached."""
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    return response


def encode_refusal(refused: frontdoor.Refused, _content_type: str | None) -> tuple[str, bytes]:
    """A refusal at the OAuth door (its rate, a body over the cap) in RFC 6749's shape."""
    error = "temporarily_unavailable" if refused.status == 429 else "invalid_request"
    body = {"error": error, "error_description": refused.message}
    return "application/json", json.dumps(body).encode()


DOOR = frontdoor.Door(
    name="oauth",
    cap=lambda: 64 * 1024,
    encode=encode_refusal,
    rate_per_address="oauth_rate_per_address",
)
# The paths behind DOOR (switchboard/asgi.py): the token and registration endpoints.
RATED_PREFIXES = ("/oauth/token", "/oauth/register")


# --- consent -------------------------------------------------------------------------------------


class ConsentForm(AllowForm):
    """The toolkit's hidden fields, and the human's choices: the endpoint and the scopes."""

    endpoint = forms.CharField(required=False)
    scopes = forms.MultipleChoiceField(
        choices=[(scope, scope) for scope in oauth_scopes.ALL], required=False
    )
    scope = forms.CharField(required=False, widget=forms.HiddenInput())


def _origin(request: HttpRequest) -> str:
    return request.build_absolute_uri("/").rstrip("/")


def _with_issuer(url: str, issuer: str) -> str:
    """``url`` with ``iss`` set to ``issuer`` in its query (replacing any ``iss`` it had)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "iss"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("iss", issuer)])))


def _redirect_source(redirect_uri: str) -> str | None:
    """The CSP source a consent's redirect goes to: the redirect URI's origin (an http(s) one),
    its scheme (a native app's ``cursor:``), None when it has neither."""
    parts = urlsplit(redirect_uri)
    if not parts.scheme:
        return None
    host = parts.netloc.rpartition("@")[2]
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{host}" if host else None
    return f"{parts.scheme}:"


def _allow_form_redirect(response: Any, redirect_uri: str) -> Any:
    """The consent page's policy with ``form-action`` widened to the client's (validated)
    redirect URI. Chromium holds a form's whole redirect chain to the page's ``form-action``:
    under the Board's ``'self'`` the 302 that follows Allow or Deny to the client is blocked,
    and the browser never leaves the consent page. Only this page's form gets the wider target,
    and only this client's."""
    source = _redirect_source(redirect_uri)
    if source is None:
        return response
    policies: tuple[tuple[str, dict[str, Any]], ...] = (
        ("_csp_config", settings.SECURE_CSP),
        ("_csp_ro_config", settings.SECURE_CSP_REPORT_ONLY),
    )
    for attribute, config in policies:
        if config:
            actions = [*config.get("form-action", ()), source]
            setattr(response, attribute, {**config, "form-action": actions})
    return response


class ConsentView(dot_views.AuthorizationView):
    """``/oauth/authorize/``: the toolkit's authorization view with the Board's consent page."""

    template_name = CONSENT_TEMPLATE
    form_class = ConsentForm

    def error_response(self, error: OAuthToolkitError, application: Any, **kwargs: Any) -> Any:
        redirect, response = dot_views.mixins.OAuthLibMixin.error_response(self, error, **kwargs)
        if redirect:
            # RFC 9207: the issuer on an error too (a Deny, a refusal), as the toolkit puts it
            # on a code, so a client that checks it for mix-ups does not drop the error.
            issuer = oauth2_settings.oauth2_authorization_server_issuer(self.request)
            return self.redirect(_with_issuer(response["url"], issuer), application)
        oauthlib_error = response["error"]
        return oauth_error(
            oauthlib_error.error,
            oauthlib_error.description or "the authorization request is not valid",
            oauthlib_error.status_code,
        )

    def _redirect_error(
        self, error: str, description: str, credentials: dict[str, Any], application: Any
    ) -> Any:
        failure = OAuthToolkitError(
            error=CustomOAuth2Error(
                error=error, description=description, state=credentials.get("state")
            ),
            redirect_uri=credentials["redirect_uri"],
        )
        return self.error_response(failure, application)

    def _requested_resource(
        self, request: HttpRequest, values: list[str]
    ) -> tuple[str | None, str | None]:
        """(kind, slug) of the one resource the client named on this origin, (None, None)
        when it named none; ``ValueError`` with the reason otherwise."""
        values = [v for v in values if v]
        if not values:
            return None, None
        if len(values) > 1:
            raise ValueError("name one resource: a token serves exactly one")
        parsed = oauth.parse_resource(values[0])
        if parsed is None or parsed[0] != _origin(request):
            raise ValueError(f"{values[0]!r} is not an OAuth resource of this server")
        return parsed[1], parsed[2]

    def _endpoints(self, request: HttpRequest, slug: str | None) -> list[Endpoint]:
        mine = oauth.endpoints_for_consent(int(request.user.pk or 0))
        return [e for e in mine if e.slug == slug] if slug is not None else mine

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            return self.error_response(error, application=None)
        application = get_application_model().objects.get(client_id=credentials["client_id"])
        # PKCE with S256 only (OAuth 2.1): a missing or plain challenge never reaches consent.
        if (
            not request.GET.get("code_challenge")
            or request.GET.get("code_challenge_method") != "S256"
        ):
            return self._redirect_error(
                "invalid_request",
                "PKCE is required with code_challenge_method=S256",
                credentials,
                application,
            )
        try:
            kind, slug = self._requested_resource(request, request.GET.getlist("resource"))
        except ValueError as exc:
            return self._redirect_error("invalid_target", str(exc), credentials, application)
        endpoints = self._endpoints(request, slug)
        if slug is not None and not endpoints:
            return self._redirect_error(
                "invalid_target",
                "the resource names no endpoint the signed-in operator manages",
                credentials,
                application,
            )
        self.oauth2_data = {
            "redirect_uri": credentials["redirect_uri"],
            "scope": scopes,
            "client_id": credentials["client_id"],
            "state": credentials.get("state"),
            "response_type": credentials["response_type"],
            "code_challenge": credentials.get("code_challenge"),
            "code_challenge_method": credentials.get("code_challenge_method"),
            "resource": " ".join(request.GET.getlist("resource")),
        }
        form = self.get_form(self.get_form_class())
        response = self.render_to_response(
            self._context(form, application, endpoints, kind, scopes, credentials)
        )
        return _allow_form_redirect(response, credentials["redirect_uri"])

    def _context(
        self,
        form: ConsentForm,
        application: Any,
        endpoints: list[Endpoint],
        kind: str | None,
        requested: Any,
        credentials: dict[str, Any],
    ) -> dict[str, Any]:
        wanted = set(requested or oauth_scopes.ALL)
        return {
            "form": form,
            "application": application,
            "client": oauth.client_name(application),
            "client_id": application.client_id,
            "redirect_host": urlsplit(credentials["redirect_uri"]).netloc
            or credentials["redirect_uri"],
            "endpoints": [
                {
                    "slug": e.slug,
                    "name": e.name,
                    "scopes": oauth_scopes.for_verbs(e.verbs),
                }
                for e in endpoints
            ],
            "kind": kind or oauth.MCP,
            "fixed": kind is not None,
            "scopes": [
                {
                    "name": scope,
                    "description": oauth_scopes.DESCRIPTIONS[scope],
                    "checked": scope in wanted,
                }
                for scope in oauth_scopes.ALL
            ],
        }

    def form_valid(self, form: ConsentForm) -> Any:
        data = form.cleaned_data
        application = get_application_model().objects.filter(client_id=data["client_id"]).first()
        if application is None:
            return oauth_error("invalid_client", "unknown client")
        # The hidden redirect_uri is only the form's word: checked against the client's
        # registration before anything here redirects (a Deny, a refusal, a code), so a
        # tampered POST is answered in JSON and never sends the browser elsewhere.
        if not data["redirect_uri"] or not application.redirect_uri_allowed(data["redirect_uri"]):
            return oauth_error(
                "invalid_request", "the redirect_uri does not match the client's registration"
            )
        credentials: dict[str, Any] = {
            "client_id": data["client_id"],
            "redirect_uri": data["redirect_uri"],
            "response_type": data.get("response_type"),
            "state": data.get("state") or None,
        }
        if data.get("code_challenge"):
            credentials["code_challenge"] = data["code_challenge"]
        if data.get("code_challenge_method"):
            credentials["code_challenge_method"] = data["code_challenge_method"]
        if credentials.get("code_challenge_method") != "S256":
            return self._redirect_error(
                "invalid_request",
                "PKCE is required with code_challenge_method=S256",
                credentials,
                application,
            )
        if not data.get("allow"):
            # Deny: the toolkit answers access_denied at the (validated) redirect URI.
            try:
                uri, _h, _b, _s = self.create_authorization_response(
                    request=self.request, scopes="", credentials=credentials, allow=False
                )
            except OAuthToolkitError as error:
                return self.error_response(error, application)
            return self.redirect(uri, application)
        try:
            kind, slug = self._requested_resource(
                self.request, (data.get("resource") or "").split()
            )
        except ValueError as exc:
            return self._redirect_error("invalid_target", str(exc), credentials, application)
        chosen = data.get("endpoint") or ""
        if slug is not None and chosen != slug:
            return self._redirect_error(
                "invalid_target",
                "the endpoint is the one the client asked for",
                credentials,
                application,
            )
        endpoint = next(iter(self._endpoints(self.request, chosen)), None)
        if endpoint is None:
            return self._redirect_error(
                "invalid_target",
                "no endpoint of that name that the signed-in operator manages",
                credentials,
                application,
            )
        usable = oauth_scopes.for_verbs(endpoint.verbs)
        scopes = [s for s in oauth_scopes.ALL if s in data.get("scopes", []) and s in usable]
        if not scopes:
            return self._redirect_error(
                "invalid_scope",
                "no scope granted that this endpoint's verbs allow",
                credentials,
                application,
            )
        resource = oauth.resource_url(_origin(self.request), kind or oauth.MCP, endpoint.slug)
        credentials["resource"] = [resource]
        try:
            uri, _h, _b, _s = self.create_authorization_response(
                request=self.request,
                scopes=" ".join(scopes),
                credentials=credentials,
                allow=True,
            )
        except OAuthToolkitError as error:
            return self.error_response(error, application)
        return self.redirect(uri, application)

    def form_invalid(self, form: ConsentForm) -> Any:
        return oauth_error("invalid_request", "the consent form is incomplete")


# --- token, revocation, registration ---------------------------------------------------------


class TokenView(dot_views.TokenView):
    """The toolkit's token endpoint; anything it did not foresee is still RFC 6749 JSON."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            response = super().post(request, *args, **kwargs)
        except OAuthToolkitError as error:
            oauthlib_error = error.oauthlib_error
            return oauth_error(
                oauthlib_error.error, oauthlib_error.description or "", oauthlib_error.status_code
            )
        except InvalidRequestError as error:
            return oauth_error(error.error, error.description or "", error.status_code)
        # oauthlib writes every body as JSON but leaves some errors (a custom one such as
        # invalid_target) without a Content-Type, which Django would call text/html.
        try:
            json.loads(response.content)
        except ValueError:
            return oauth_error("invalid_request", "the token request could not be answered")
        response["Content-Type"] = "application/json"
        response["Cache-Control"] = "no-store"
        return response


def registration_refusal(raw: bytes) -> JsonResponse | None:
    """Why a client's metadata (an RFC 7591 registration, or an RFC 7592 update of one) is
    refused, as the RFC 6749 JSON answer, or None: a JSON object whose redirect URIs are
    loopback or public https (``oauth.redirect_uri_problem``), with the authorization code grant
    only (and its refresh tokens) and the ``code`` response type."""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        return oauth_error("invalid_client_metadata", "the body is not JSON")
    if not isinstance(body, dict):
        return oauth_error("invalid_client_metadata", "the body must be a JSON object")
    if (problem := jsonlimits.problem(body)) is not None:
        return oauth_error("invalid_client_metadata", f"the metadata {problem}")
    uris = body.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        return oauth_error(
            "invalid_redirect_uri", "redirect_uris must be a non-empty array of strings"
        )
    for uri in uris:
        if (problem := oauth.redirect_uri_problem(uri)) is not None:
            return oauth_error("invalid_redirect_uri", problem)
    grants = body.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= {"authorization_code", "refresh_token"}:
        return oauth_error(
            "invalid_client_metadata",
            "only the authorization_code (and refresh_token) grant types are supported",
        )
    if "response_types" in body and body["response_types"] != ["code"]:
        return oauth_error("invalid_client_metadata", 'response_types must be ["code"]')
    return None


class RegisterView(dot_views.DynamicClientRegistrationView):
    """RFC 7591 registration with Switchboard's refusals first (module docstring)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if (refused := registration_refusal(request.body)) is not None:
            return refused
        return super().post(request, *args, **kwargs)


class RegistrationManagementView(dot_views.DynamicClientRegistrationManagementView):
    """RFC 7592 ``/oauth/register/{client_id}/``: a registered client reads, updates or deletes
    its registration with the registration access token it was given (the toolkit's view,
    whose URL every registration answer names). An update is refused exactly as a
    registration is, so it cannot bring in what registration keeps out; its token is checked
    before its body, so a caller without it is told 401 and nothing about the body."""

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> Any:
        # The toolkit's own check of the token (pinned 3.4: tests/oauth/test_server.py is the
        # tripwire), which its put runs again: one more indexed read, on a rare request.
        auth = self._authenticate_registration_request(request, client_id)
        if isinstance(auth, HttpResponse):
            return auth
        if (refused := registration_refusal(request.body)) is not None:
            return refused
        return super().put(request, client_id, *args, **kwargs)


def _storable_parameters(view: Any) -> Any:
    """``view``, first refusing (RFC 6749 JSON, ``invalid_request``) a query or form parameter
    PostgreSQL cannot hold (a NUL, a lone surrogate): the toolkit looks clients, codes and
    tokens up with them as given, and the database's refusal was a 500 page."""

    @functools.wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        for params in (request.GET, request.POST):
            for name, values in params.lists():
                for text in (name, *values):
                    if (problem := jsonlimits.text_problem(text)) is not None:
                        return oauth_error("invalid_request", f"the parameter {name!r} {problem}")
        return view(request, *args, **kwargs)

    return checked


register = csrf_exempt(RegisterView.as_view())
register_management = csrf_exempt(RegistrationManagementView.as_view())
token = _storable_parameters(TokenView.as_view())
revoke_token = _storable_parameters(dot_views.RevokeTokenView.as_view())
authorize = _storable_parameters(ConsentView.as_view())


# --- discovery -----------------------------------------------------------------------------------


class ServerMetadataView(dot_views.OAuthServerMetadataView):
    """RFC 8414, the toolkit's document with the scopes in ``oauth_scopes``' order."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        response = super().get(request, *args, **kwargs)
        data = json.loads(response.content)
        data["scopes_supported"] = list(oauth_scopes.ALL)
        data["code_challenge_methods_supported"] = ["S256"]
        answer = JsonResponse(data)
        answer["Access-Control-Allow-Origin"] = "*"
        return answer


server_metadata = ServerMetadataView.as_view()


@require_GET
def protected_resource(request: HttpRequest, kind: str, slug: str) -> HttpResponse:
    """RFC 9728 metadata of one endpoint's OAuth resource (no query: a slug that does not
    exist gets the same document, so this tells nobody which ones do)."""
    origin = _origin(request)
    data = {
        "resource": oauth.resource_url(origin, kind, slug),
        "authorization_servers": [origin],
        "scopes_supported": list(oauth_scopes.ALL),
        "bearer_methods_supported": ["header"],
        "resource_name": f"Switchboard endpoint {slug} ({'MCP' if kind == oauth.MCP else 'A2A'})",
        "resource_documentation": origin + "/",
    }
    response = JsonResponse(data)
    response["Access-Control-Allow-Origin"] = "*"
    return response


@csrf_exempt  # a POST to a mistyped endpoint (no trailing slash) is a JSON 404, not a CSRF page
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    if request.path in _WITHOUT_SLASH:
        said = f"no such OAuth endpoint; it ends in a slash: {request.path}/"
        return oauth_error("invalid_request", said, status=404)
    return oauth_error("invalid_request", "no such OAuth document", status=404)


# The endpoints a client may have typed without their slash, said back with it.
_WITHOUT_SLASH = frozenset({"/oauth/authorize", "/oauth/token", "/oauth/revoke", "/oauth/register"})
