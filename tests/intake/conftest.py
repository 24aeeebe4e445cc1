"""Fixtures for webhook intake: a GitHub-style source of alice's with a check_run rule."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from tests.base import Personas
from tests.factories import RuleFactory, SourceFactory
from todos.intake.routing import sign
from todos.models import Rule, Source

SECRET = "it-is-a-secret"

CHECK_RUN_FAILED: dict[str, Any] = {
    "action": "completed",
    "check_run": {"name": "test (3.12)", "conclusion": "failure", "html_url": "https://ci/1"},
    "repository": {"full_name": "example/shop"},
}


@dataclass
class Hook:
    """Deliver to one source through the real URL and view (Django's test client)."""

    client: Client
    source: Source
    rule: Rule

    def post(
        self,
        payload: Any = None,
        *,
        body: bytes | None = None,
        secret: str | None = SECRET,
        header: str = "X-Hub-Signature-256",
        event: str | None = "check_run",
        delivery: str | None = None,
        slug: str | None = None,
        content_type: str = "application/json",
        **headers: str,
    ) -> Any:
        if body is None:
            body = json.dumps(CHECK_RUN_FAILED if payload is None else payload).encode()
        extra = dict(headers)
        if secret is not None:
            extra[header] = sign(secret, body)
        if event is not None:
            extra["X-GitHub-Event"] = event
        if delivery is not None:
            extra["X-GitHub-Delivery"] = delivery
        return self.client.post(
            f"/hooks/{slug or self.source.slug}",
            data=body,
            content_type=content_type,
            headers=extra,
        )


@pytest.fixture
def hook(personas: Personas) -> Hook:
    source = SourceFactory(owner=personas.alice, slug="github", secret=SECRET)
    rule = RuleFactory(
        source=source,
        endpoint=personas.endpoint_a,
        name="CI failures",
        queue="ci-fix",
        max_attempts=3,
        match={
            "headers": {"X-GitHub-Event": "check_run"},
            "payload": {
                "action": "completed",
                "check_run.conclusion": {"in": ["failure", "timed_out"]},
                "repository.full_name": {"exists": True},
            },
        },
        title_template="Fix {{ check_run.name }} on {{ repository.full_name }}",
        work_order_template="The check failed: {{ check_run.html_url }}",
    )
    return Hook(Client(), source, rule)
