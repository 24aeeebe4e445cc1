"""Push rings over real HTTP to a receiver on loopback: the signature the guide documents,
retries, the circuit breaker, SSRF refusals, and a receiver that fails never holding up a sweep
or losing its todo."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from switchboard import credentials, runtime_settings
from switchboard.lib import webhook_out
from switchboard.models import Endpoint
from tests.base import Personas
from tests.reach import claimed, expire_lease, new_todo
from todos import lifecycle, push, sweeps
from todos.models import PushAttempt, Todo

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "push-rings.md"


@dataclass
class Receiver:
    """An HTTP server on loopback that answers ``status`` (after ``delay`` seconds)."""

    status: int = 204
    delay: float = 0.0
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.requests.append((dict(self.headers.items()), self.rfile.read(length)))
            if state.delay:
                time.sleep(state.delay)
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://localhost:{server.server_address[1]}/ring?x=1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def documented_verify() -> Any:
    """The verifier the guide tells receivers to copy, run as written."""
    block = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None, "docs/guides/push-rings.md lost its verifier"
    namespace: dict[str, Any] = {}
    exec(block.group(1), namespace)  # noqa: S102 (our own documentation)
    return namespace["verify"]


def with_push_url(endpoint: Endpoint, url: str) -> Endpoint:
    return credentials.update_endpoint(
        endpoint, name=endpoint.name, verbs=endpoint.verbs, push_url=url
    )


def pushes(endpoint: Endpoint) -> list[tuple[str, str, int, int | None]]:
    rows = PushAttempt.objects.filter(endpoint=endpoint).order_by("id")
    return [(p.reason, p.state, p.tries, p.status_code) for p in rows]


def circuit(endpoint: Endpoint) -> tuple[int, bool] | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT failures, open_until > now() FROM push_circuits WHERE endpoint_id = %s",
            [endpoint.id],
        )
        row = cursor.fetchone()
    return (row[0], bool(row[1])) if row else None


def make_due(endpoint: Endpoint) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE push_attempts SET next_try_at = now() - interval '1 second'"
            " WHERE endpoint_id = %s AND state = 'queued'",
            [endpoint.id],
        )


@pytest.mark.django_db(transaction=True)
def test_a_push_receiver_gets_a_signed_post_it_verifies_with_the_documented_scheme(
    personas: Personas, receiver: Receiver
) -> None:
    endpoint = with_push_url(personas.endpoint_a, receiver.url)
    secret = endpoint.push_secret
    assert secret.startswith("sbp_")
    todo = new_todo(endpoint.id, "triage")

    report = sweeps.run_pass()

    assert report.rung == [todo.id]
    assert report.pushes is not None and report.pushes.delivered == 1
    ((headers, body),) = receiver.requests
    verify = documented_verify()
    assert verify(secret, headers["Switchboard-Signature"], body)
    assert not verify(secret, headers["Switchboard-Signature"], body + b" ")
    assert not verify("sbp_another", headers["Switchboard-Signature"], body)
    stale = webhook_out.signature(secret, body, int(time.time()) - 3600)
    assert not verify(secret, stale, body)
    payload = json.loads(body)
    rung = Todo.objects.get(id=todo.id).activity.get(kind="rung")
    assert payload == {
        "queue": "triage",
        "todo_id": todo.id,
        "ring_id": rung.detail["ring_id"],
        "reason": "push",
    }
    assert headers["Host"] == f"localhost:{receiver.url.split(':')[2].split('/')[0]}"
    assert headers["Content-Type"] == "application/json"
    assert pushes(endpoint) == [("push", "delivered", 1, 204)]
    # Rung once: the next pass has nothing to ring or push (the gate, and the todo was rung).
    assert sweeps.run_pass().rung == []
    assert len(receiver.requests) == 1


@pytest.mark.django_db(transaction=True)
def test_a_failing_receiver_never_blocks_the_sweep_and_opens_the_breaker(
    personas: Personas, receiver: Receiver
) -> None:
    runtime_settings.put("push_timeout_seconds", 1)
    runtime_settings.put("push_breaker_failures", 2)
    runtime_settings.clear_cache()
    endpoint = with_push_url(personas.endpoint_a, receiver.url)
    receiver.delay = 3.0  # longer than the push timeout
    first, second = new_todo(endpoint.id), new_todo(endpoint.id)
    lapsed = claimed(personas.endpoint_b.id)
    expire_lease(lapsed.todo.id)

    started = time.monotonic()
    report = sweeps.run_pass()
    took = time.monotonic() - started

    # The sweep did its work, the push cost one timeout, and the endpoint's second push was
    # handed back untried rather than waiting on a receiver that is not answering.
    assert report.reaped_requeued == [lapsed.todo.id]
    assert took < 2.5, took
    assert report.pushes is not None
    assert (report.pushes.failed, report.pushes.handed_back) == (1, 1)
    assert sorted(p[2] for p in pushes(endpoint)) == [0, 1]
    assert circuit(endpoint) == (1, False)

    # A 5xx is a failed try too; the second failure in a row opens the breaker.
    receiver.delay, receiver.status = 0.0, 503
    make_due(endpoint)
    report = sweeps.run_pass()
    assert report.pushes is not None and report.pushes.opened == [str(endpoint.id)]
    assert circuit(endpoint) == (2, True)
    heard = len(receiver.requests)

    # While it is open nothing is sent to the endpoint; the todos are untouched and claimable.
    make_due(endpoint)
    assert sweeps.run_pass().pushes == push.PushReport()
    assert len(receiver.requests) == heard
    assert {t.state for t in Todo.objects.filter(id__in=[first.id, second.id])} == {"pending"}
    assert all(state == "queued" for _, state, _, _ in pushes(endpoint))
    assert lifecycle.claim_next(endpoint.id, queues=["default"], owner="w") is not None

    # A test ring is refused while it is open (the breaker bounds what the button can send).
    assert push.queue_test_push(endpoint.id) == push.TestRing("breaker_open")
    assert len(pushes(endpoint)) == 2

    # Once it has run its time, the next due push is tried, and a delivery closes it.
    receiver.status = 200
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE push_circuits SET open_until = now() - interval '1 second'"
            " WHERE endpoint_id = %s",
            [endpoint.id],
        )
    make_due(endpoint)
    report = sweeps.run_pass()
    assert report.pushes is not None and report.pushes.delivered == 2
    assert circuit(endpoint) == (0, False)
    ring = push.queue_test_push(endpoint.id)
    assert ring.outcome == "queued" and ring.ring_id is not None
    assert push.queue_test_push(endpoint.id) == push.TestRing("throttled")
    report = sweeps.run_pass()
    assert report.pushes is not None and report.pushes.delivered == 1
    assert json.loads(receiver.requests[-1][1])["reason"] == "test"
    assert json.loads(receiver.requests[-1][1])["todo_id"] is None
    assert json.loads(receiver.requests[-1][1])["ring_id"] == str(ring.ring_id)


@pytest.mark.django_db(transaction=True)
def test_a_push_is_tried_again_with_backoff_then_failed_and_a_4xx_is_not_retried(
    personas: Personas, receiver: Receiver
) -> None:
    runtime_settings.put("push_max_tries", 2)
    runtime_settings.clear_cache()
    endpoint = with_push_url(personas.endpoint_a, receiver.url)
    receiver.status = 500
    new_todo(endpoint.id)

    sweeps.run_pass()
    (row,) = PushAttempt.objects.filter(endpoint=endpoint)
    assert (row.state, row.tries, row.status_code, row.error) == ("queued", 1, 500, "HTTP 500")
    assert 3 < (row.next_try_at - row.created_at).total_seconds() < 10  # the first backoff
    assert sweeps.run_pass().pushes == push.PushReport()  # not due yet
    make_due(endpoint)
    sweeps.run_pass()
    assert pushes(endpoint) == [("push", "failed", 2, 500)]

    receiver.status = 404
    push.queue_test_push(endpoint.id)
    sweeps.run_pass()
    assert pushes(endpoint)[-1] == ("test", "failed", 1, 404)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/ring",
        "http://localhost:9/ring",
        "http://10.1.2.3/ring",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/ring",
        "http://[::ffff:127.0.0.1]:9/ring",
        "ftp://example.com/ring",
    ],
)
def test_inside_targets_are_refused_unless_a_setting_allows_them(
    personas: Personas, url: str
) -> None:
    endpoint = with_push_url(personas.endpoint_a, url)
    new_todo(endpoint.id)
    sweeps.ring_all(sweeps.PassReport())

    report = push.send_due(allow_private=False)

    assert report.failed == 1
    (row,) = PushAttempt.objects.filter(endpoint=endpoint)
    assert row.state == "failed" and row.error.startswith("refused:"), row.error


def test_the_resolved_address_is_the_one_checked() -> None:
    with pytest.raises(webhook_out.TargetRefused):
        webhook_out.resolve("http://localhost/x", allow_private=False)
    scheme, host, port, address, path = webhook_out.resolve(
        "http://localhost:8080/a?b=1", allow_private=True
    )
    assert (scheme, host, port, path) == ("http", "localhost", 8080, "/a?b=1")
    assert address in {"127.0.0.1", "::1"}


@pytest.mark.django_db
def test_a_push_secret_is_minted_with_the_first_push_url_and_rotated(
    personas: Personas,
) -> None:
    endpoint, _, _ = credentials.create_endpoint(
        personas.alice, name="P", slug="pushy", verbs=[], push_url="https://agent.example/ring"
    )
    first = endpoint.push_secret
    assert first.startswith("sbp_") and Endpoint.objects.get(pk=endpoint.pk).push_secret == first
    plain, _, _ = credentials.create_endpoint(personas.alice, name="Q", slug="plain", verbs=[])
    assert plain.push_secret == ""
    # Changing the URL keeps the secret; rotating replaces it.
    with_push_url(endpoint, "https://agent.example/other")
    assert Endpoint.objects.get(pk=endpoint.pk).push_secret == first
    rotated = credentials.rotate_push_secret(endpoint)
    assert rotated != first and Endpoint.objects.get(pk=endpoint.pk).push_secret == rotated


def test_https_connects_to_the_resolved_address_with_the_names_sni_and_certificate(
    tmp_path: Path,
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"),
            *("-addext", "subjectAltName=DNS:localhost"),
        ],
        check=True,
        capture_output=True,
    )
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    names: list[str | None] = []
    served.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            names.append(self.headers["Host"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = served.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        trusted = ssl.create_default_context(cafile=str(cert))
        answer = webhook_out.post(
            f"https://localhost:{port}/ring",
            b"{}",
            {},
            timeout=5,
            allow_private=True,
            context=trusted,
        )
        assert answer.status == 200
        assert names == ["localhost", f"localhost:{port}"]
        # A certificate for another name fails the check: the name, not the address, is checked.
        with pytest.raises(ssl.SSLError):
            webhook_out.post(
                f"https://127.0.0.1:{port}/ring",
                b"{}",
                {},
                timeout=5,
                allow_private=True,
                context=trusted,
            )
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "url",
    [
        "http://[64:ff9b::7f00:1]:9/ring",  # NAT64 of 127.0.0.1
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data",  # NAT64 of 169.254.169.254
        "http://[64:ff9b:1::a00:1]/ring",  # local-use NAT64 of 10.0.0.1
        "http://[::127.0.0.1]:9/ring",  # IPv4-compatible
        "http://[::10.1.2.3]/ring",
        "http://[2002:7f00:1::1]/ring",  # 6to4 of 127.0.0.1
    ],
)
def test_addresses_that_carry_an_inside_ipv4_address_are_refused(url: str) -> None:
    with pytest.raises(webhook_out.TargetRefused):
        webhook_out.resolve(url, allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw@8.8.8.8/ring",
        "https://user@8.8.8.8/ring",
        "http://:pw@[2606:4700:4700::1111]/ring",
    ],
)
def test_a_url_carrying_credentials_is_refused_for_them_whatever_its_host(url: str) -> None:
    # Public address literals: nothing else about these URLs is refused, and nothing is looked
    # up (a name that does not resolve here would be refused, or let through by the form's
    # guard, for that instead).
    for allow_private in (False, True):
        with pytest.raises(webhook_out.TargetRefused, match="must not carry a user name or pass"):
            webhook_out.resolve(url, allow_private=allow_private)
        with pytest.raises(webhook_out.TargetRefused, match="must not carry a user name or pass"):
            webhook_out.check(url, allow_private=allow_private)


def test_an_ipv6_address_carrying_a_public_ipv4_one_is_judged_by_it() -> None:
    assert webhook_out.is_global("64:ff9b::808:808")  # NAT64 of 8.8.8.8
    assert not webhook_out.is_global("64:ff9b::c0a8:101")  # NAT64 of 192.168.1.1
    assert webhook_out.is_global("2606:4700:4700::1111")


def test_a_receiver_that_trickles_its_answer_is_cut_at_the_whole_push_timeout() -> None:
    """The timeout bounds the whole exchange: one byte every 0.2 s never lets a per-read
    timeout of 0.5 s fire, yet the push ends at 1 s."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
                if stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            webhook_out.post(
                f"http://127.0.0.1:{listener.getsockname()[1]}/ring",
                b"{}",
                {},
                timeout=1.0,
                allow_private=True,
            )
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 2.0


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_loop_sends_pushes_off_its_pass(personas: Personas, receiver: Receiver) -> None:
    """A slow receiver delays pushes, never the reap: the loop's passes run while a push waits."""
    endpoint = with_push_url(personas.endpoint_a, receiver.url)
    receiver.delay = 1.5
    new_todo(endpoint.id)
    lapsed = claimed(personas.endpoint_b.id)
    expire_lease(lapsed.todo.id)
    lines: list[str] = []
    sweeper = sweeps.Sweeper(0.05, emit=lines.append)
    thread = threading.Thread(target=sweeper.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 1.0
        while not any(line.startswith("reap:") for line in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.02)
        deadline = time.monotonic() + 5.0
        while not any("push" in line for line in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.05)
    finally:
        sweeper.stop()
        thread.join(5)
