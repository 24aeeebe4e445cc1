"""daphne, refusing an over-cap request body before any of it is stored.

daphne reads a request with Twisted's HTTP/1.1 parser, which spools the whole body (into a
temporary file past 100 kB) before the ASGI application runs: the applications' own caps
(``switchboard/lib/asgi.py``) answer 413 only after a 300 MiB upload has been received and
written to disk. This module keeps daphne and moves the refusal to where the parser learns the
body's length (decision 0011):

- a ``Content-Length`` over the path's cap is answered 413 as soon as the headers end, before a
  byte of the body is read (an ``Expect: 100-continue`` is not answered with 100 then);
- a chunked body is counted as it is decoded and answered 413 at ``cap + 1`` bytes; a body
  within its cap is held in memory, never in Twisted's temporary file;
- after a 413 the connection is half-closed and whatever the client still sends is read and
  thrown away for at most ``LINGER_SECONDS`` (so the client reads the answer rather than a reset),
  then dropped.

Slow uploads are bounded here too, where a body is received (daphne hands the application a
request only once its whole body is in): a body that has not fully arrived ``body_seconds``
after its headers is answered 408, and a client address already sending ``bodies_per_address``
bodies has its next one answered 429 at its headers (decision 0023).

The caps, the bounds and the answers' shapes come from the application's route table
(``set_routes``, which ``switchboard.asgi`` calls with ``switchboard.lib.frontdoor.RouteTable``:
the table its router reads, so the server and the apps cannot disagree on a path's surface);
with none set, nothing is refused here. A refusal carries ``Connection: close`` and the body
the path's own surface answers with (a JSON-RPC error on ``/mcp`` and ``/a2a``, an OTLP
``Status`` on ``/otlp``, JSON elsewhere). HTTP/2 streams (not enabled without Twisted's extras)
keep the applications' caps.

``python -m switchboard.lib.server <daphne arguments>`` is daphne's command line with this server;
``manage.py serve`` runs the same.

This reaches into daphne and Twisted (the factory daphne's ``run()`` builds, the request class's
hooks, the channel's parsed request line), so it runs only on the releases whose internals
``tests/switchboard/test_server.py`` proved: on another release, or with a hook missing, the
server refuses to start (``require_proven``) rather than serve without caps
(docs/decisions/0025-vendor-boundaries.md).
"""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
import sys
from io import BytesIO
from typing import Any, cast
from urllib.parse import unquote

from daphne.cli import CommandLineInterface as DaphneCommandLine
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server as DaphneServer
from twisted.web import http

from switchboard.lib import frontdoor

logger = logging.getLogger(__name__)

# How long a refused client may go on sending (read and discarded) before the connection drops.
LINGER_SECONDS = 5.0

_routes: frontdoor.RouteTable | None = None
# Bodies being received per client address, over every connection of this process.
_receiving: dict[str, int] = {}

# The daphne and Twisted minors whose internals tests/switchboard/test_server.py proved (each
# pinned to that minor in pyproject.toml). Add one only after that test passes on it.
PROVEN_MINORS = {"daphne": frozenset({"4.2"}), "twisted": frozenset({"26.10"})}
# The request hooks ``CappedRequest`` overrides, as Twisted's ``Request`` defines them.
_REQUEST_HOOKS = ("gotLength", "handleContentChunk", "requestReceived", "connectionLost")


def installed_version(distribution: str) -> str:
    """The installed release of ``distribution`` (tests stand another in)."""
    return importlib.metadata.version(distribution)


def _source_says(func: Any, text: str) -> bool:
    try:
        return text in inspect.getsource(func)
    except (OSError, TypeError):  # no source to read: not a release anyone proved
        return False


def unproven() -> list[str]:
    """What this server needs of daphne and Twisted and does not find, in words; empty when
    the installed releases are proven ones and every internal it uses is where it expects."""
    problems = []
    for distribution, minors in PROVEN_MINORS.items():
        version = installed_version(distribution)
        if ".".join(version.split(".")[:2]) not in minors:
            proven = ", ".join(f"{m}.x" for m in sorted(minors))
            problems.append(f"{distribution} {version} is not a proven release ({proven})")
    for hook in _REQUEST_HOOKS:
        if not callable(getattr(http.Request, hook, None)):
            problems.append(f"twisted.web.http.Request has no {hook}()")
    if "parsePOSTFormSubmission" not in inspect.signature(http.Request.__init__).parameters:
        problems.append("twisted.web.http.Request() takes no parsePOSTFormSubmission")
    if not issubclass(WebRequest, http.Request):
        problems.append("daphne's WebRequest is no twisted.web.http.Request")
    if not callable(getattr(HTTPFactory, "buildProtocol", None)):
        problems.append("daphne's HTTPFactory has no buildProtocol()")
    if not hasattr(http.HTTPChannel, "requestFactory"):
        problems.append("twisted.web.http.HTTPChannel has no requestFactory")
    if not _source_says(http.HTTPChannel.lineReceived, "self._path = "):
        problems.append("twisted.web.http.HTTPChannel no longer keeps the request line's _path")
    if not _source_says(DaphneServer.run, "self.http_factory = "):
        problems.append("daphne's Server.run() no longer assigns self.http_factory")
    if getattr(DaphneCommandLine, "server_class", None) is not DaphneServer:
        problems.append("daphne's CommandLineInterface has no server_class to replace")
    return problems


def require_proven() -> None:
    """Exit (status 1, the reasons on stderr) unless ``unproven()`` finds nothing: a server
    that cannot apply the body caps does not start."""
    problems = unproven()
    if problems:
        raise SystemExit(
            "switchboard: refusing to start a server that could not cap request bodies: "
            + "; ".join(problems)
            + ". Install the locked releases (requirements.lock), or prove new ones with "
            "tests/switchboard/test_server.py and add them to PROVEN_MINORS in "
            "switchboard/lib/server.py."
        )


def set_routes(routes: frontdoor.RouteTable | None) -> None:
    """Refuse and bound request bodies by ``routes`` (None: nothing is refused here)."""
    global _routes
    _routes = routes


def request_path(raw_target: bytes) -> str | None:
    """The path of a request line's target as daphne puts it in the scope (percent-decoded),
    or None when daphne will refuse it (not ASCII)."""
    try:
        return unquote(raw_target.split(b"?", 1)[0].decode("ascii"))
    except UnicodeDecodeError:
        return None  # daphne answers 400 to this request before any application runs


def cap_for(raw_target: bytes) -> int | None:
    """The cap for a request line's target (path and query, percent-encoded, as sent)."""
    path = request_path(raw_target)
    if _routes is None or path is None:
        return None
    return _routes.route(path).door.cap()


class CappedRequest(WebRequest):
    """daphne's request, refusing a body over its path's cap before it is stored, and one that
    arrives too slowly or beside too many others from its address (module docstring)."""

    _cap: int | None = None
    _target = b""
    _received = 0
    _refused = False
    _linger: Any = None
    _deadline: Any = None
    _counted: str | None = None  # the address this body is counted against while it arrives

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Twisted parses a form POST's body into ``request.args``, finding the type with the
        # email package's header parser on every POST with a body (about 60 µs each). daphne
        # never reads ``args``: it hands the raw body to the application, which parses it.
        kwargs["parsePOSTFormSubmission"] = False
        super().__init__(*args, **kwargs)

    def gotLength(self, length: int | None) -> None:
        # The channel has parsed the request line (``_path`` is its raw target) and the headers.
        # ``length`` is None for a chunked body and 0 when there is none.
        target = getattr(self.channel, "_path", None)
        self._target = target if isinstance(target, bytes) else b""
        self._cap = cap_for(target) if isinstance(target, bytes) else None
        if self._cap is None:
            super().gotLength(length)
            return
        if length is not None and length > self._cap:
            # Not a byte of the body has been read: no content file at all.
            self._refuse(frontdoor.too_large(self._cap))
            return
        # At most ``cap`` bytes, kept in memory (as the applications keep them after reading):
        # never Twisted's temporary file, which a chunked body would otherwise grow first.
        self.content = BytesIO()
        if length != 0:
            self._bound_upload()

    def _bound_upload(self) -> None:
        """Count the coming body against its address and start its deadline."""
        routes = _routes
        if routes is None:
            return
        address = str(getattr(self.channel.transport.getPeer(), "host", "?"))
        most = routes.bodies_per_address
        if most > 0 and not routes.uncounted(address):
            if _receiving.get(address, 0) >= most:
                self._refuse(frontdoor.too_many_bodies(most))
                return
            _receiving[address] = _receiving.get(address, 0) + 1
            self._counted = address
        if routes.body_seconds > 0:
            from twisted.internet import reactor  # daphne's: daphne.server installs it

            seconds = routes.body_seconds
            self._deadline = cast(Any, reactor).callLater(
                seconds, lambda: self._refuse(frontdoor.too_slow(seconds))
            )

    def _body_ended(self) -> None:
        """The body arrived, or never will: free its place and stop its clock."""
        if self._deadline is not None:
            if self._deadline.active():
                self._deadline.cancel()
            self._deadline = None
        address, self._counted = self._counted, None
        if address is not None:
            left = _receiving.get(address, 0) - 1
            if left > 0:
                _receiving[address] = left
            else:
                _receiving.pop(address, None)

    def handleContentChunk(self, data: bytes) -> None:
        if self._refused:
            return
        self._received += len(data)
        if self._cap is not None and self._received > self._cap:
            self._refuse(frontdoor.too_large(self._cap))
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        self._body_ended()
        if self._refused:
            return  # answered already; no application runs for this request
        super().requestReceived(command, path, version)

    def connectionLost(self, reason: Any) -> None:
        self._body_ended()
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        super().connectionLost(reason)

    def _refuse(self, refused: frontdoor.Refused) -> None:
        """Answer ``refused`` now, read nothing more into the request, close the connection."""
        if self._refused:
            return
        self._refused = True
        self._body_ended()
        if self.content is not None:
            self.content.close()  # a chunked body's first ``cap`` bytes, now dropped
        self.content = None  # type: ignore[assignment]  # Twisted's "no body kept"
        # allHeadersReceived would answer "100 Continue" after this when the client asked.
        self.requestHeaders.removeHeader(b"Expect")
        channel = self.channel
        transport = channel.transport
        # Whatever else arrives on this connection is thrown away, never parsed or stored.
        channel.dataReceived = _discard
        channel.persistent = False
        path = request_path(self._target)
        # daphne's access log never sees this request: say what was refused (the path escaped,
        # so a newline in it cannot forge a line).
        logger.info(
            "%d: %s of %r from %s",
            refused.status,
            f"a body over the {self._cap or 0}-byte cap"
            if refused.reason == frontdoor.TOO_LARGE
            else refused.message,
            path,
            getattr(transport.getPeer(), "host", "?"),
        )
        content_type = self.requestHeaders.getRawHeaders(b"content-type", [None])[0]
        if _routes is not None:
            transport.write(
                _routes.refusal(
                    path or "/",
                    refused,
                    content_type.decode("latin-1") if content_type is not None else None,
                )
            )
        # Half-close: the answer goes out with a FIN while the client's remaining bytes are
        # still read (and dropped), so the client sees the answer rather than a connection
        # reset.
        lose_write = getattr(transport, "loseWriteConnection", None)
        if lose_write is not None:
            from twisted.internet import reactor  # daphne's: daphne.server installs it

            lose_write()
            self._linger = cast(Any, reactor).callLater(LINGER_SECONDS, transport.abortConnection)
        else:
            transport.loseConnection()


def _discard(data: bytes) -> None:
    pass


class CappedHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr: Any) -> Any:
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = CappedRequest
        return protocol


class Server(DaphneServer):
    """daphne's server with ``CappedHTTPFactory`` in place of daphne's own.

    daphne's ``run()`` builds its HTTP factory and listens with it in one method, with no hook
    between; the property puts this server's factory in the place ``run()`` assigns.
    """

    _capped_factory: CappedHTTPFactory | None = None

    @property
    def http_factory(self) -> CappedHTTPFactory | None:
        return self._capped_factory

    @http_factory.setter
    def http_factory(self, _daphne_factory: Any) -> None:
        self._capped_factory = CappedHTTPFactory(self)


class CommandLineInterface(DaphneCommandLine):
    server_class = Server

    def run(self, args: list[str]) -> None:
        require_proven()
        super().run(args)


def main(argv: list[str] | None = None) -> None:
    """daphne's command line (``daphne --help``) with the capped server."""
    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    # Run the module's imported copy: ``switchboard.asgi`` sets the cap on that one, not on
    # ``__main__``.
    from switchboard.lib import server

    server.main()
