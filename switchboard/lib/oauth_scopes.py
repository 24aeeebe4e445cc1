"""The OAuth scopes an agent's token may carry, and the endpoint verbs each one opens.

A token is granted one endpoint and some of these scopes on the Board's consent page
(``switchboard/oauth_views.py``); at every request it may use only the endpoint's verbs that
its scopes name (``switchboard/oauth.py``), so a token never exceeds its endpoint's verbs and a
call outside its scopes answers 403 ``insufficient_scope`` naming the scope it needs
(docs/guides/agents.md, "Connect with OAuth").

Pure: names only (the verbs are ``switchboard.models.Verb``'s values, spelled here as strings so
settings can read this module before the app registry is ready). ``submit`` is the verb of MCP's
requester: ``submit_todo``, the MCP App's ``answer_todo``, ``cancel_todo`` and ``retry_todo``
(``mcp_server/verbs.py``) and MCP Tasks' ``tasks/*`` methods; a surface asks for a tool's verb,
never its name (``mcp_server/transport.py`` ``needed_scope``).
"""

from __future__ import annotations

from collections.abc import Iterable

READ = "todos:read"
WORK = "todos:work"
SUBMIT = "todos:submit"

# The order the consent page and the metadata list them in.
ALL: tuple[str, ...] = (READ, WORK, SUBMIT)

DESCRIPTIONS: dict[str, str] = {
    READ: "Read the endpoint's todos (list, get, resources and subscriptions)",
    WORK: "Work on todos: claim, heartbeat, complete, fail, release, ask for input, reject",
    SUBMIT: "Create todos and follow them: send A2A tasks; submit, answer, cancel and retry"
    " todos over MCP",
}

VERBS: dict[str, tuple[str, ...]] = {
    READ: ("list_todos", "get_todo"),
    WORK: (
        "claim_next",
        "claim",
        "heartbeat",
        "complete",
        "fail",
        "release",
        "request_input",
        "reject",
    ),
    SUBMIT: ("a2a", "submit"),
}

_SCOPE_OF: dict[str, str] = {verb: scope for scope, verbs in VERBS.items() for verb in verbs}


def parse(text: str | None) -> tuple[str, ...]:
    """The known scopes in a space-separated scope string, in ``ALL``'s order."""
    given = set((text or "").split())
    return tuple(scope for scope in ALL if scope in given)


def verbs_of(scopes: Iterable[str]) -> frozenset[str]:
    """Every verb the scopes open."""
    return frozenset(verb for scope in scopes for verb in VERBS.get(scope, ()))


def scope_of(verb: str) -> str | None:
    """The scope that opens ``verb`` (None for a verb no scope opens)."""
    return _SCOPE_OF.get(verb)


def for_verbs(verbs: Iterable[str]) -> tuple[str, ...]:
    """The scopes that open at least one of ``verbs``: what a token for an endpoint with these
    verbs could use, in ``ALL``'s order."""
    wanted = {_SCOPE_OF[verb] for verb in verbs if verb in _SCOPE_OF}
    return tuple(scope for scope in ALL if scope in wanted)
