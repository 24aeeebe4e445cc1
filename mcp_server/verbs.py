"""Verb scopes: which tools and resources an endpoint may see and use (docs/guides/agents.md).

An endpoint's ``verbs`` is its scope. ``tools/list`` shows only the tools in it and a call
outside it is ``forbidden``; ``get_todo`` rides on ``list_todos`` (applied by
``Endpoint.allows``). Every drain tool is named after its verb; the requester's tools ride on
``submit``: ``submit_todo``, and the MCP App's own tools (``APP_TOOLS``, visible to the App only,
``_meta.ui.visibility: ["app"]``), which answer, cancel or retry a todo from the chat.
"""

from __future__ import annotations

from switchboard.lib.actors import Actor
from switchboard.models import Endpoint, Verb

# tools/list order: deterministic (the 2026 spec's SHOULD), in the order an agent uses them.
TOOLS: tuple[str, ...] = (
    Verb.LIST_TODOS,
    Verb.GET_TODO,
    Verb.CLAIM_NEXT,
    Verb.CLAIM,
    Verb.HEARTBEAT,
    Verb.COMPLETE,
    Verb.FAIL,
    Verb.RELEASE,
    Verb.REQUEST_INPUT,
    Verb.REJECT,
    "submit_todo",
    "answer_todo",
    "cancel_todo",
    "retry_todo",
)
# The MCP App's tools: the Board's actions for the person who submitted the todo.
APP_TOOLS: tuple[str, ...] = ("answer_todo", "cancel_todo", "retry_todo")
# Tools named after something other than their verb.
VERB_OF: dict[str, str] = {
    "submit_todo": Verb.SUBMIT,
    **dict.fromkeys(APP_TOOLS, Verb.SUBMIT),
}

# Resources ride on the verbs whose data they show: a todo's detail is what get_todo returns;
# a queue's summary (the doorbell's subscription target) serves those who list or drain it.
TODO_RESOURCE_VERBS: tuple[str, ...] = (Verb.GET_TODO,)
QUEUE_RESOURCE_VERBS: tuple[str, ...] = (Verb.LIST_TODOS, Verb.CLAIM_NEXT)


def owner_of(endpoint: Endpoint) -> str:
    """The lease owner recorded for this endpoint's claims: the endpoint as an actor,
    ``endpoint:<uuid>`` (switchboard/lib/actors.py).

    Every agent holding the endpoint's key is the same owner (per-session owners are deferred,
    design); two workers sharing a key are kept apart by the fence, not by the owner.
    """
    return str(Actor.endpoint(endpoint.id))


def verb_of(tool: str) -> str:
    """The verb ``tool`` rides on: its own name for a drain tool, ``submit`` for the
    requester's."""
    return VERB_OF.get(tool, tool)


def allows(endpoint: Endpoint, tool: str) -> bool:
    """Whether the endpoint's verbs include the one ``tool`` rides on."""
    return endpoint.allows(verb_of(tool))


def visible_tools(endpoint: Endpoint) -> tuple[str, ...]:
    return tuple(name for name in TOOLS if allows(endpoint, name))


def can_submit(endpoint: Endpoint) -> bool:
    """A requester over MCP: submit_todo and the tasks/* methods."""
    return endpoint.allows(Verb.SUBMIT)


def can_read_todos(endpoint: Endpoint) -> bool:
    return any(endpoint.allows(verb) for verb in TODO_RESOURCE_VERBS)


def can_read_queues(endpoint: Endpoint) -> bool:
    return any(endpoint.allows(verb) for verb in QUEUE_RESOURCE_VERBS)
