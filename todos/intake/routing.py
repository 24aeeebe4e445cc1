"""The routing language of webhook rules: matching, templates, signatures (docs/guides/webhooks.md).

Everything here is pure: no database, no clock. Intake (``todos.intake``) and the rule testers
(admin and Board) call the same functions, so a trace shown by a tester is the trace a delivery
would record.

A rule's ``match`` is a JSON object with up to two sections; every condition in it must hold, and
an empty match matches everything::

    {"headers": {"X-GitHub-Event": "check_run"},
     "payload": {"action": "completed",
                 "check_run.conclusion": {"in": ["failure", "timed_out"]},
                 "repository.full_name": {"exists": true}}}

``headers`` keys are header names (case-insensitive); ``payload`` keys are dotted paths into the
JSON body (``a.b.0.c``: object keys, and list indexes written as digits). A condition is either a
literal (a string, number, boolean or null: equal to it, with JSON's types, so ``1`` is not
``true`` nor ``"1"``) or an object of operators, all of which must hold:

- ``{"eq": v}`` / ``{"ne": v}``: equal / not equal (a missing field is not equal to anything);
- ``{"in": [v, …]}`` / ``{"not_in": [v, …]}``: one of / none of (a missing field is in none);
- ``{"exists": true|false}``: the field is present (``null`` counts as present) / absent;
- ``{"prefix": "s"}``: a string that starts with ``s``.

Nothing runs code and nothing is unbounded: evaluation is one walk per condition, and the size of
a match is capped. Templates replace ``{{ dotted.path }}`` with that payload field (strings as they
are, other values as compact JSON); a missing field renders empty and is reported.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from switchboard.lib import jsonlimits, redact
from switchboard.lib.text import cut_utf8, whole_number

# --- the match language --------------------------------------------------------------------

SECTIONS = ("headers", "payload")
OPERATORS = ("eq", "ne", "in", "not_in", "exists", "prefix")
MATCH_MAX_BYTES = 16 * 1024
PATH_MAX_SEGMENTS = 32
LIST_MAX_ITEMS = 256
# How much of an actual value a trace keeps: enough to see why a condition failed.
TRACE_VALUE_MAX_CHARS = 200

_MISSING: Any = object()


class InvalidMatch(ValueError):
    """A rule's match is not in the language; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Condition:
    section: str  # "headers" or "payload"
    key: str  # a lower-cased header name, or a dotted payload path
    ops: tuple[tuple[str, Any], ...]


def parse_match(match: Any) -> tuple[Condition, ...]:
    """Validate ``match`` and return its conditions in a stable order; raise ``InvalidMatch``."""
    if isinstance(match, str):
        try:
            match = json.loads(match)
        except ValueError as exc:
            raise InvalidMatch(f"match is not JSON: {exc}") from None
    if not isinstance(match, dict):
        raise InvalidMatch("match must be a JSON object")
    if len(json.dumps(match)) > MATCH_MAX_BYTES:
        raise InvalidMatch(f"match must be at most {MATCH_MAX_BYTES} bytes of JSON")
    unknown = sorted(set(match) - set(SECTIONS))
    if unknown:
        raise InvalidMatch(
            f"unknown section {unknown[0]!r}; a match has only {' and '.join(SECTIONS)}"
        )
    conditions: list[Condition] = []
    for section in SECTIONS:
        body = match.get(section, {})
        if not isinstance(body, dict):
            raise InvalidMatch(f"{section} must be an object of conditions")
        for key, spec in body.items():
            where = f"{section}.{key!r}"
            if not isinstance(key, str) or not key.strip():
                raise InvalidMatch(f"{section}: a condition needs a non-empty name")
            if section == "headers":
                key = key.strip().lower()
            else:
                _check_path(key, where)
            conditions.append(Condition(section, key, _parse_ops(spec, where)))
    return tuple(conditions)


def check_path(path: str, where: str = "path") -> None:
    """Refuse a dotted path ``lookup`` could not follow (``InvalidMatch``)."""
    _check_path(path, where)


def _check_path(path: str, where: str) -> None:
    segments = path.split(".")
    if len(segments) > PATH_MAX_SEGMENTS:
        raise InvalidMatch(f"{where}: a path has at most {PATH_MAX_SEGMENTS} segments")
    if any(segment == "" for segment in segments):
        raise InvalidMatch(f"{where}: a path has no empty segments")


def _parse_ops(spec: Any, where: str) -> tuple[tuple[str, Any], ...]:
    if isinstance(spec, list):
        raise InvalidMatch(f'{where}: to match one of several values write {{"in": [...]}}')
    if not isinstance(spec, dict):
        return (("eq", spec),)
    if not spec:
        raise InvalidMatch(f"{where}: an operator object needs at least one operator")
    ops: list[tuple[str, Any]] = []
    for op, operand in spec.items():
        if op not in OPERATORS:
            raise InvalidMatch(f"{where}: unknown operator {op!r}; known: {', '.join(OPERATORS)}")
        if op in ("in", "not_in"):
            if not isinstance(operand, list):
                raise InvalidMatch(f"{where}: {op} takes a list")
            if len(operand) > LIST_MAX_ITEMS:
                raise InvalidMatch(f"{where}: {op} takes at most {LIST_MAX_ITEMS} values")
        elif op == "exists" and not isinstance(operand, bool):
            raise InvalidMatch(f"{where}: exists takes true or false")
        elif op == "prefix" and not isinstance(operand, str):
            raise InvalidMatch(f"{where}: prefix takes a string")
        ops.append((op, operand))
    return tuple(ops)


def lookup(document: Any, path: str) -> Any:
    """The value at a dotted ``path`` in ``document``, or ``_MISSING``."""
    value = document
    for segment in path.split("."):
        if isinstance(value, dict):
            if segment not in value:
                return _MISSING
            value = value[segment]
        elif isinstance(value, list) and (index := whole_number(segment)) is not None:
            if index >= len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Equality with JSON's types: ``true`` is not ``1``, ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _holds(op: str, operand: Any, value: Any) -> bool:
    present = value is not _MISSING
    if op == "exists":
        return present is operand
    if not present:
        return op in ("ne", "not_in")
    if op == "eq":
        return json_equal(value, operand)
    if op == "ne":
        return not json_equal(value, operand)
    if op == "in":
        return any(json_equal(value, item) for item in operand)
    if op == "not_in":
        return not any(json_equal(value, item) for item in operand)
    if op == "prefix":
        return isinstance(value, str) and value.startswith(operand)
    raise AssertionError(op)  # parse_match admits no other operator


def _shown(value: Any) -> Any:
    """A value as a trace records it: missing is ``None`` with ``found: false``; long text cut."""
    if value is _MISSING:
        return None
    if isinstance(value, str):
        return value if len(value) <= TRACE_VALUE_MAX_CHARS else value[:TRACE_VALUE_MAX_CHARS] + "…"
    if isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return value if len(text) <= TRACE_VALUE_MAX_CHARS else text[:TRACE_VALUE_MAX_CHARS] + "…"
    return value


def evaluate(
    conditions: Sequence[Condition], headers: Mapping[str, str], payload: Any
) -> tuple[bool, list[dict[str, Any]]]:
    """Whether every condition holds, and one trace entry per condition (all are evaluated, so
    a trace shows every reason a rule missed, not only the first)."""
    checks: list[dict[str, Any]] = []
    matched = True
    for condition in conditions:
        if condition.section == "headers":
            value = headers.get(condition.key, _MISSING)
        else:
            value = lookup(payload, condition.key)
        ok = all(_holds(op, operand, value) for op, operand in condition.ops)
        matched = matched and ok
        checks.append(
            {
                "on": condition.section,
                "key": condition.key,
                "expect": {op: operand for op, operand in condition.ops},
                "found": value is not _MISSING,
                "actual": _shown(value),
                "ok": ok,
            }
        )
    return matched, checks


# --- one match inside another --------------------------------------------------------------


def covers(broad: Any, narrow: Any) -> bool:
    """Whether every delivery ``narrow`` matches is matched by ``broad`` too; raise
    ``InvalidMatch`` for either that is not in the language.

    Field by field: each field ``broad`` tests must be tested by ``narrow`` at least as strictly
    (``{"in": ["a", "b"]}`` covers ``"a"``, ``{"exists": true}`` covers any test that needs the
    field present, ``{"prefix": "v"}`` covers ``{"prefix": "v1"}``, ``{"ne": "a"}`` covers
    ``"b"``), and a field ``broad`` does not test holds whatever ``narrow`` says of it; an empty
    match covers every match. Fields are taken one at a time, so a pair that overlaps only
    through two paths into one value (``a`` equal to an object, and ``a.b``) reads as no
    overlap: the answer may miss an overlap, never claim one that is not there. A ``narrow`` no
    delivery can match (``{"in": []}``) is covered by nothing: it makes no todo to double.
    """
    narrow_fields = _ops_by_field(parse_match(narrow))
    if not all(_satisfiable(ops) for ops in narrow_fields.values()):
        return False
    return all(
        _implies(narrow_fields.get(name, ()), ops)
        for name, ops in _ops_by_field(parse_match(broad)).items()
    )


Ops = tuple[tuple[str, Any], ...]


def _ops_by_field(conditions: Sequence[Condition]) -> dict[tuple[str, str], Ops]:
    """The operators on each field, two conditions on one field (``X-A`` and ``x-a``) joined."""
    fields: dict[tuple[str, str], Ops] = {}
    for condition in conditions:
        name = (condition.section, condition.key)
        fields[name] = fields.get(name, ()) + condition.ops
    return fields


def _all_hold(ops: Ops, value: Any) -> bool:
    return all(_holds(op, operand, value) for op, operand in ops)


def _finite(ops: Ops) -> list[Any] | None:
    """The values ``ops`` admit when an ``eq`` or ``in`` lists them, else None (unbounded)."""
    listed = [operand for op, operand in ops if op == "eq"]
    for op, operand in ops:
        if op == "in":
            listed.extend(operand)
    if not any(op in ("eq", "in") for op, _ in ops):
        return None
    return [value for value in listed if _all_hold(ops, value)]


def _prefixes(ops: Ops) -> list[str]:
    return [operand for op, operand in ops if op == "prefix"]


def _satisfiable(ops: Ops) -> bool:
    """Whether some value, or the field's absence, passes every one of ``ops``."""
    if _all_hold(ops, _MISSING):
        return True
    finite = _finite(ops)
    if finite is not None:
        return bool(finite)
    if ("exists", False) in ops:
        return False
    # Present and unbounded: only prefixes can contradict one another (an exclusion list is
    # finite, the strings with a prefix are not).
    prefixes = sorted(_prefixes(ops), key=len)
    return all(longer.startswith(shorter) for shorter, longer in pairwise(prefixes))


def _implies(narrow: Ops, broad: Ops) -> bool:
    """Whether every value (or absence) that passes ``narrow`` passes ``broad``."""
    if _all_hold(narrow, _MISSING) and not _all_hold(broad, _MISSING):
        return False
    finite = _finite(narrow)
    if finite is not None:
        return all(_all_hold(broad, value) for value in finite)
    if ("exists", False) in narrow:
        return True  # absent only, and absence was settled above
    # Present values, infinitely many: strings under narrow's prefixes (any value without one),
    # less the values narrow excludes by name.
    prefixes = _prefixes(narrow)
    excluded = [operand for op, operand in narrow if op == "ne"]
    excluded += [item for op, operand in narrow if op == "not_in" for item in operand]

    def shut_out(value: Any) -> bool:
        if any(json_equal(value, other) for other in excluded):
            return True
        return bool(prefixes) and not (
            isinstance(value, str) and all(value.startswith(p) for p in prefixes)
        )

    for op, operand in broad:
        if op == "exists":
            ok = operand is True
        elif op == "prefix":
            ok = any(p.startswith(operand) for p in prefixes)
        elif op == "ne":
            ok = shut_out(operand)
        elif op == "not_in":
            ok = all(shut_out(item) for item in operand)
        else:  # eq, in: a finite set cannot hold infinitely many values
            ok = False
        if not ok:
            return False
    return True


# --- templates -----------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")


def render(template: str, payload: Any) -> tuple[str, list[str]]:
    """Replace each ``{{ path }}`` with that payload field; return the text and the missing paths.

    Strings go in as they are, ``null`` as the empty string, anything else as compact JSON. Nothing
    is evaluated: a placeholder is a path, never an expression.
    """
    missing: list[str] = []

    def substitute(found: re.Match[str]) -> str:
        path = found.group(1)
        value = lookup(payload, path)
        if value is _MISSING:
            if path not in missing:
                missing.append(path)
            return ""
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    return PLACEHOLDER.sub(substitute, template), missing


def placeholders(template: str) -> list[str]:
    """The paths a template refers to, in order of first use."""
    seen: list[str] = []
    for path in PLACEHOLDER.findall(template):
        if path not in seen:
            seen.append(path)
    return seen


# --- a source's rules against one delivery -------------------------------------------------


def _no_time(arrived: dt.datetime, payload: Any) -> dict[str, Any]:
    return {}


def rule_called(name: str, position: int, rule_id: int | None) -> str:
    """What a rule is called wherever it is named (``Rule.__str__``, ``RuleSpec.called``): its
    name, or, unnamed, its position (the order it is tried in) and its id, as ``create_rule``
    prints it: ``rule #20 (id 7)``. Positions may tie (the default is 0), so the number alone
    could name two rules; ``rule #20`` alone for a rule not saved yet."""
    if name:
        return name
    return f"rule #{position}" + (f" (id {rule_id})" if rule_id is not None else "")


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """What routing needs of a rule; built from a ``Rule`` row (``from_rule``) or a form."""

    id: int | None
    name: str
    position: int
    enabled: bool
    match: Any
    endpoint_id: Any
    endpoint_slug: str
    endpoint_usable: bool  # live and seen by the source's owner (switchboard.scope.routable_from)
    queue: str
    title_template: str
    work_order_template: str
    max_attempts: int
    # lifecycle.create's time arguments for a delivery arriving at an instant with a payload
    # (``Rule.todo_time``); none for a spec not built from a rule.
    todo_time: Callable[[dt.datetime, Any], dict[str, Any]] = _no_time

    @property
    def called(self) -> str:
        """The rule's name as its ``Rule`` says it (``rule_called``)."""
        return rule_called(self.name, self.position, self.id)

    @classmethod
    def from_rule(cls, rule: Any, routable: bool) -> RuleSpec:
        """``routable``: the source's owner may route to the rule's endpoint."""
        endpoint = rule.endpoint
        return cls(
            id=rule.id,
            name=rule.name,
            position=rule.position,
            enabled=rule.enabled,
            match=rule.match,
            endpoint_id=endpoint.id,
            endpoint_slug=endpoint.slug,
            endpoint_usable=endpoint.revoked_at is None and routable,
            queue=rule.queue,
            title_template=rule.title_template,
            work_order_template=rule.work_order_template,
            max_attempts=rule.max_attempts,
            todo_time=rule.todo_time,
        )


@dataclass(frozen=True, slots=True)
class PlannedTodo:
    """One todo a matching rule asks for, with the trace entry it carries."""

    rule: RuleSpec
    title: str  # rendered, and cut to the title's byte budget as the todo will store it
    title_cut: bool
    work_order: str
    trace: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RoutingPlan:
    trace: list[dict[str, Any]] = field(default_factory=list)
    todos: list[PlannedTodo] = field(default_factory=list)


def plan(
    rules: Iterable[RuleSpec],
    headers: Mapping[str, str],
    payload: Any,
    *,
    source_slug: str,
    title_max_bytes: int,
    work_order_max_chars: int,
) -> RoutingPlan:
    """Evaluate ``rules`` in order against one delivery: the routing trace, and the todos to make.

    ``headers`` must already be the stored (filtered, lower-cased) headers, so a rule can never
    match on a credential. A rule whose match no longer parses, or whose endpoint is revoked or
    not its source owner's, is recorded as an error and creates nothing.
    """
    result = RoutingPlan()
    for rule in rules:
        entry: dict[str, Any] = {
            "rule_id": rule.id,
            "rule": rule.name,
            "position": rule.position,
            "endpoint": rule.endpoint_slug,
            "queue": rule.queue,
        }
        result.trace.append(entry)
        if not rule.enabled:
            entry.update(matched=False, skipped="disabled")
            continue
        try:
            conditions = parse_match(rule.match)
        except InvalidMatch as exc:
            entry.update(matched=False, error=f"invalid match: {exc}")
            continue
        matched, checks = evaluate(conditions, headers, payload)
        entry.update(matched=matched, conditions=checks)
        if not matched:
            continue
        if not rule.endpoint_usable:
            entry["error"] = "endpoint revoked or not owned by the source's owner"
            continue
        title, missing_title = render(rule.title_template, payload)
        work_order, missing_order = render(rule.work_order_template, payload)
        missing = list(dict.fromkeys(missing_title + missing_order))
        if missing:
            entry["missing_fields"] = missing
        if not title.strip():
            title = f"{source_slug}: {rule.name or rule.queue}"
        title, title_cut = cut_utf8(title, title_max_bytes)
        if len(work_order) > work_order_max_chars:
            # Cut as the title is, and said in the trace: the sender does not choose how long
            # the rendered instructions come out, and dropping the todo would lose the work.
            work_order = work_order[:work_order_max_chars]
            entry["work_order_cut"] = True
        result.todos.append(PlannedTodo(rule, title, title_cut, work_order, entry))
    return result


# --- headers and signatures ----------------------------------------------------------------

SIGNATURE_HEADERS = ("x-signature-256", "x-hub-signature-256")
# Standard Webhooks (https://www.standardwebhooks.com): the delivery id is signed with the body.
STANDARD_ID, STANDARD_TIMESTAMP, STANDARD_SIGNATURE = (
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
)
STANDARD_SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix that marks a secret, not one)
DELIVERY_HEADERS = ("x-github-delivery", "x-delivery-id", STANDARD_ID)
# Never stored, never matchable: credentials, cookies, signatures, and anything named like one.
_DROPPED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-hub-signature",
        "x-api-key",
        *SIGNATURE_HEADERS,
        STANDARD_SIGNATURE,
    }
)
_SECRET_WORDS = ("token", "secret", "signature", "password", "api-key", "apikey", "credential")
# Senders name their credentials in ways no word list covers: X-Auth-User / X-Auth-Email
# (Cloudflare-style key pairs), X-Routing-Key and friends, X-Shopify-Hmac-Sha256. Dropping a
# harmless header costs a rule nothing it could rely on; storing a key leaks it to the Board.
_SECRET_PREFIXES = ("x-auth",)
_SECRET_SUFFIXES = ("-key", "-hmac")
_SECRET_INFIXES = ("-hmac-",)
# ... nor abbreviations: a header whose name has one of these as a word (split at "-" and "_"):
# X-Pass, X-Sig, X-Webhook-Pwd, X-Session, X-Jwt.
_SECRET_NAME_WORDS = frozenset(
    {"pass", "passwd", "pwd", "pw", "sig", "sign", "signed", "auth", "key", "hmac", "jwt"}
    | {"session", "sess", "cred", "creds", "otp", "bearer", "cookie", "sid"}
)
HEADER_VALUE_MAX_CHARS = 2048
HEADERS_MAX = 100


def is_secret_header(name: str) -> bool:
    """Whether a header named ``name`` (any case) may carry a credential, and so is never kept."""
    name = name.lower()
    return (
        name in _DROPPED_HEADERS
        or any(word in name for word in (*_SECRET_WORDS, *_SECRET_INFIXES))
        or name.startswith(_SECRET_PREFIXES)
        or name.endswith(_SECRET_SUFFIXES)
        or not _SECRET_NAME_WORDS.isdisjoint(re.split(r"[-_]", name))
    )


def stored_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The headers an event keeps: lower-cased names, headers named like credentials dropped,
    values and count capped, and any value that still holds a credential's shape masked
    (``switchboard/lib/redact.py``: a bearer, a JWT, a GitHub token under a harmless name)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        name = name.strip().lower()
        if not name or is_secret_header(name) or name in kept or len(kept) >= HEADERS_MAX:
            continue
        cut = value.replace("\x00", "")[:HEADER_VALUE_MAX_CHARS]
        kept[name] = redact.mask(cut)[0][:HEADER_VALUE_MAX_CHARS]
    return kept


@dataclass(frozen=True, slots=True)
class Verification:
    ok: bool
    detail: dict[str, Any]


def verify_signature(
    secret: str, body: bytes, headers: Mapping[str, str], *, required: bool
) -> Verification:
    """Check ``sha256=<hex>`` HMAC-SHA256 of ``body`` in the first signature header present.

    ``headers`` maps lower-cased names to values (the raw request headers, not the stored ones).
    The digest is compared in constant time; the detail never contains the secret or the digest.
    """
    if not required:
        return Verification(True, {"scheme": "none", "result": "not_required"})
    header = next((name for name in SIGNATURE_HEADERS if name in headers), None)
    detail: dict[str, Any] = {"scheme": "hmac-sha256", "header": header}
    if header is None:
        return Verification(False, detail | {"result": "missing"})
    value = headers[header].strip()
    algorithm, _, given = value.partition("=")
    if algorithm.lower() != "sha256" or not re.fullmatch(r"[0-9a-fA-F]{64}", given):
        return Verification(False, detail | {"result": "malformed"})
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, given.lower()):
        return Verification(False, detail | {"result": "mismatch"})
    return Verification(True, detail | {"result": "valid"})


def verify_standard(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float,
    tolerance_seconds: int,
) -> Verification:
    """Check a Standard Webhooks delivery: ``webhook-signature`` holds space-separated
    ``v1,<base64>`` signatures, one of which must be the HMAC-SHA256 of
    ``<webhook-id>.<webhook-timestamp>.<body>`` keyed with the base64 key after ``whsec_`` in
    ``secret``; ``webhook-timestamp`` (Unix seconds) must be within ``tolerance_seconds`` of
    ``now``, either way, so a captured delivery cannot be replayed later (within the window,
    its ``webhook-id`` makes it a duplicate).

    ``headers`` maps lower-cased names to values. The detail never holds the secret or a digest.
    """
    detail: dict[str, Any] = {"scheme": "standard-webhooks", "header": STANDARD_SIGNATURE}
    delivery_id = headers.get(STANDARD_ID, "").strip()
    timestamp = headers.get(STANDARD_TIMESTAMP, "").strip()
    signatures = headers.get(STANDARD_SIGNATURE, "").strip()
    if not (delivery_id and timestamp and signatures):
        return Verification(False, detail | {"result": "missing"})
    if not re.fullmatch(r"[0-9]{1,12}", timestamp):
        return Verification(False, detail | {"result": "malformed"})
    detail["timestamp"] = int(timestamp)
    if abs(now - int(timestamp)) > tolerance_seconds:
        return Verification(False, detail | {"result": "timestamp_out_of_window"})
    try:
        key = base64.b64decode(secret.removeprefix(STANDARD_SECRET_PREFIX), validate=True)
    except ValueError:
        return Verification(False, detail | {"result": "mismatch"})  # no secret it could match
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    expected = hmac.new(key, signed, hashlib.sha256).digest()
    seen_v1 = False
    for candidate in signatures.split():
        version, _, encoded = candidate.partition(",")
        if version != "v1":
            continue  # another version (v1a: asymmetric) this source cannot check
        try:
            given = base64.b64decode(encoded, validate=True)
        except ValueError:
            continue
        seen_v1 = True
        if hmac.compare_digest(expected, given):
            return Verification(True, detail | {"result": "valid"})
    return Verification(False, detail | {"result": "mismatch" if seen_v1 else "malformed"})


def new_standard_secret() -> str:
    """A fresh Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return STANDARD_SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def sign_standard(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    """A ``webhook-signature`` value for a delivery: for tests, docs and the rule tester."""
    key = base64.b64decode(secret.removeprefix(STANDARD_SECRET_PREFIX))
    digest = hmac.new(key, f"{delivery_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(digest.digest()).decode("ascii")


# What the rule tester and the rule form parse is what intake accepts: one check for both.
NotStorableJson = jsonlimits.NotAcceptedJson
loads = jsonlimits.loads


def sign(secret: str, body: bytes) -> str:
    """The ``X-Signature-256`` value for ``body``: for tests, docs and the rule tester."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
