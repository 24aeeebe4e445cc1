"""A span's token usage: which spans count, read from which attributes, and what is refused.

Pure: no I/O. ``extract`` reads one span's attributes (the OTLP ``AnyValue``s as sent, before
the allow-list cuts them) and returns its ``Usage``, or None with the reason it counts nothing.

The rule: count a model call once
---------------------------------
Usage is counted only on a span that *is* a model call: its category (``otlp.translate.category``,
the GenAI conventions first) is ``llm``. An agent, workflow or chain span (``invoke_agent``,
``invoke_workflow``, OpenInference ``AGENT``/``CHAIN``, Claude Code's ``claude_code.interaction``)
that carries usage is summing its children's model calls; counting it too would count every
token twice. Its usage is not counted and the reason (``not_model_call``) is. A tool, HTTP or
database span with usage attributes is refused the same way. Frameworks that put usage only
on the aggregate and never on a model-call span are undercounted rather than double-counted:
the spans say which they did, and the rule does not guess (docs/decisions/0036-cost-and-budgets.md).

Names, first present wins per token type
----------------------------------------
- input: ``gen_ai.usage.input_tokens``, ``llm.token_count.prompt``, ``gen_ai.usage.prompt_tokens``
  (deprecated), Claude Code's ``input_tokens``;
- output: ``gen_ai.usage.output_tokens``, ``llm.token_count.completion``,
  ``gen_ai.usage.completion_tokens``, ``output_tokens``;
- cache read: ``gen_ai.usage.cache_read.input_tokens``,
  ``llm.token_count.prompt_details.cache_read``, ``cache_read_tokens``;
- cache write: ``gen_ai.usage.cache_creation.input_tokens``,
  ``llm.token_count.prompt_details.cache_write``, ``cache_creation_tokens``;
- reasoning: ``gen_ai.usage.reasoning.output_tokens``,
  ``llm.token_count.completion_details.reasoning``.

The GenAI conventions count cached tokens inside ``input_tokens`` and reasoning inside
``output_tokens`` (sub-counts); so does OpenInference. Claude Code reports the Anthropic API's
figures, where ``input_tokens`` excludes both cache counts: its input is normalised to the
conventions' meaning (input + cache read + cache write) so that one pricing formula serves all.

Model: ``gen_ai.response.model``, else ``gen_ai.request.model``, else ``llm.model_name``, else
Claude Code's ``model``. Provider: ``gen_ai.provider.name``, ``gen_ai.system``, ``llm.provider``.

Bad input
---------
A count that is negative, not an integer (a string, a boolean, a fraction), or above
``MAX_TOKENS`` (10^12 in one span) makes the span count nothing (``bad_count``): a span whose
figures cannot be trusted is not half-trusted. The span itself is stored either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue

MAX_TOKENS = 10**12
MODEL_MAX_BYTES = 128

# Per token type, the attribute names in the order they are read.
INPUT = ("gen_ai.usage.input_tokens", "llm.token_count.prompt", "gen_ai.usage.prompt_tokens")
OUTPUT = (
    "gen_ai.usage.output_tokens",
    "llm.token_count.completion",
    "gen_ai.usage.completion_tokens",
)
CACHE_READ = ("gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details.cache_read")
CACHE_WRITE = (
    "gen_ai.usage.cache_creation.input_tokens",
    "llm.token_count.prompt_details.cache_write",
)
REASONING = (
    "gen_ai.usage.reasoning.output_tokens",
    "llm.token_count.completion_details.reasoning",
)
# Claude Code's llm_request span: the Anthropic API's names, unprefixed.
CLAUDE_CODE_SPAN = "claude_code.llm_request"
CLAUDE_CODE = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_creation_tokens",
}
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system", "llm.provider")
ALL_KEYS = frozenset(
    (*INPUT, *OUTPUT, *CACHE_READ, *CACHE_WRITE, *REASONING, *CLAUDE_CODE.values())
)

# Why a span counted nothing (the label of switchboard_otlp_usage_refused_total).
NOT_MODEL_CALL = "not_model_call"
BAD_COUNT = "bad_count"


@dataclass(frozen=True, slots=True)
class Usage:
    """One model call's tokens, the conventions' meaning: cache counts inside ``input``,
    reasoning inside ``output``."""

    model: str | None
    provider: str | None
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output


class _Bad(Exception):
    pass


def _count(value: AnyValue | None) -> int | None:
    """A token count: a non-negative integer up to ``MAX_TOKENS``; None when absent; ``_Bad``
    for anything else. An integral double (some SDKs send every number as one) counts."""
    if value is None:
        return None
    which = value.WhichOneof("value")
    if which == "int_value":
        n = value.int_value
    elif which == "double_value" and value.double_value.is_integer():
        n = int(value.double_value)
    else:
        raise _Bad
    if not 0 <= n <= MAX_TOKENS:
        raise _Bad
    return n


def _first(attributes: Mapping[str, AnyValue], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        n = _count(attributes.get(key))
        if n is not None:
            return n
    return None


def _text(attributes: Mapping[str, AnyValue], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if value is not None and value.WhichOneof("value") == "string_value":
            text = value.string_value.replace("\x00", "").strip()
            if text:
                return text.encode()[:MODEL_MAX_BYTES].decode("utf-8", "ignore")
    return None


def has_usage(attributes: Mapping[str, AnyValue]) -> bool:
    """Whether any usage attribute is present (cheap: most spans have none)."""
    return not ALL_KEYS.isdisjoint(attributes)


def extract(
    name: str, category: str, attributes: Mapping[str, AnyValue]
) -> tuple[Usage | None, str | None]:
    """The span's usage and None, or None and why it counts nothing (None when it carries no
    usage at all). ``category`` is the span's (``otlp.translate.category``)."""
    if not has_usage(attributes):
        return None, None
    if category != "llm":
        return None, NOT_MODEL_CALL
    claude = name.startswith(CLAUDE_CODE_SPAN)
    try:
        input_ = _first(attributes, INPUT)
        output = _first(attributes, OUTPUT)
        cache_read = _first(attributes, CACHE_READ)
        cache_write = _first(attributes, CACHE_WRITE)
        reasoning = _first(attributes, REASONING)
        if claude and input_ is None:
            raw = _count(attributes.get(CLAUDE_CODE["input"]))
            cache_read = _count(attributes.get(CLAUDE_CODE["cache_read"])) or cache_read
            cache_write = _count(attributes.get(CLAUDE_CODE["cache_write"])) or cache_write
            if raw is not None:
                input_ = raw + (cache_read or 0) + (cache_write or 0)
            output = output if output is not None else _count(attributes.get("output_tokens"))
    except _Bad:
        return None, BAD_COUNT
    if input_ is None and output is None:
        return None, None
    input_ = input_ or 0
    output = output or 0
    cache_read = cache_read or 0
    cache_write = cache_write or 0
    reasoning = reasoning or 0
    # Sub-counts larger than their whole: the figures contradict each other.
    if cache_read + cache_write > input_ or reasoning > output or input_ > MAX_TOKENS:
        return None, BAD_COUNT
    model = _text(attributes, MODEL_KEYS)
    if model is None and claude:
        model = _text(attributes, ("model",))
    return (
        Usage(
            model=model,
            provider=_text(attributes, PROVIDER_KEYS),
            input=input_,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            reasoning=reasoning,
        ),
        None,
    )


def as_dict(usage: Usage) -> dict[str, Any]:
    return {
        "input": usage.input,
        "output": usage.output,
        "cache_read": usage.cache_read,
        "cache_write": usage.cache_write,
        "reasoning": usage.reasoning,
    }
