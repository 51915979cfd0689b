"""Waitress's server and channel, guarded so that slow or idle clients cannot use up what
signed Slack requests need.

Waitress reads every connection on one I/O thread and hands a thread only a complete
request, so a slow client costs a socket, not a thread; but sockets are bounded too (the
connection limit, the open-file limit), and waitress stops accepting at its limit: 2,100
connections sending a byte every 10 s left signed requests waiting in the listen queue
until they timed out. Here:

- a request must arrive whole within `REQUEST_SECONDS` of its first byte (Slack sends it
  at once): a slower one is answered 408 and closed;
- a client address may hold at most `PER_CLIENT_CONNECTIONS` connections;
- at the connection limit (or a client's), a new connection is not refused: those that
  have waited longest on their client (no complete request yet, or idle between
  requests) give it their place. A Slack request arrives whole in its first packet and
  is then being served, which no eviction touches; only connections that have waited over
  `EVICT_AFTER` are evicted, so a connection just accepted has the time to send its
  request;
- while nothing can be evicted yet, a new connection is still accepted when its request
  is already there whole (a Slack request has been sent by the time it is accepted: the
  listen queue holds it behind the slow ones), or has sent nothing yet, into a reserve
  past the limit (when that half is full, the oldest connection there that has still sent
  nothing gives its place: a Slack request is sent right after its connection is made,
  so a connection accepted a moment before its first packet is the newest, not the
  oldest); one that has sent part of a request and stopped is closed at once. So
  slow connections queued in front of a signed request cost it microseconds each, not
  their place: whatever the number of slow sockets, a signed request gets in;
- a connection closed after an answer (a 413 for a body over the limit, a 408) is closed
  politely: its sending half first, then what the client still sends is read and dropped
  for up to `LINGER_SECONDS` (Apache's "lingering close"), so that the client reads the
  answer instead of a TCP reset for the unread bytes.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections import deque
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

# From the first byte of a request to its last: Slack's are small and sent at once.
# Waitress, per worker process. Slow or idle connections cost a socket, not a thread;
# this many may be open at once, and the reserve below past it (the container's
# open-file limit must allow both).
CONNECTION_LIMIT = 1000
# A connection that sends nothing for this long is closed.
CHANNEL_TIMEOUT = 30
REQUEST_SECONDS = 10.0
# Connections one client address may hold (behind a proxy the proxy is one client: it
# forwards whole requests, which are being served, and those are never evicted).
PER_CLIENT_CONNECTIONS = 64
# A connection younger than this is never evicted: it has not had time to send.
EVICT_AFTER = 1.0
# After an answer that closes the connection: how long, and how much, to read and drop.
LINGER_SECONDS = 5.0
LINGER_BYTES = 64 * 1024 * 1024
# Connections accepted per readiness event of the listening socket, and evicted at once
# when the limit is reached (one look at every connection makes room for this many).
ACCEPT_BATCH = 32
# Connections accepted past the limit while nobody can be evicted yet (half of them for
# connections that have sent nothing yet); the open-file limit must allow it.
RESERVE = 100
# At the limit and the reserve, how long the listening socket rests (the kernel queues new
# connections meanwhile), and how long a look that found nobody to evict holds.
FULL_REST = 0.05
# What a first look at a new connection reads without taking it off the socket.
PEEK_BYTES = 256 * 1024
# How a connection past the limit was let in.
WHOLE, SILENT = "whole", "silent"


def request_arrived(data: bytes) -> bool | None:
    """Whether `data` (what a new connection has sent so far) holds a whole request: True,
    False (part of one), or None (nothing yet). A request with Slack's signature headers
    counts as arrived once its headers are in (a large body may still be on its way)."""
    if not data:
        return None
    head, found, body = data.partition(b"\r\n\r\n")
    if not found:
        return False
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if b"x-slack-signature" in fields and b"x-slack-request-timestamp" in fields:
        return True
    if b"transfer-encoding" in fields:
        return body.endswith(b"0\r\n\r\n")
    try:
        length = int(fields.get(b"content-length", b"0"))
    except ValueError:
        return True  # waitress answers it 400
    return len(body) >= length


TIMEOUT_ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 37\r\n\r\nthe request did not arrive in 10 s\r\n\r\n"
)


class _StaleReadiness(Exception):
    """A read event that was for the socket that had this descriptor before."""


class GuardedChannel(HTTPChannel):  # type: ignore[misc]
    """One connection: when its request started, since when it waits on its client, and
    its lingering close."""

    request: Any = None  # waitress's parser of a request not complete yet
    heard = False  # it has sent something

    def __init__(self, server: Any, sock: Any, addr: Any, adj: Any, map: Any = None) -> None:
        # Before waitress registers the channel (add_channel), which counts it by client.
        self.client = str(addr[0]) if isinstance(addr, tuple) else str(addr)
        super().__init__(server, sock, addr, adj, map=map)
        now = time.monotonic()
        self.request_started = now
        self.idle_since = now  # since the connection was made, or its last answer went out
        self.linger_until: float | None = None
        self.linger_started = 0.0
        self.lingered = 0

    # --- how long it has waited on its client ------------------------------------------

    @property
    def lingering(self) -> bool:
        return self.linger_until is not None

    @property
    def waiting(self) -> bool:
        """Nothing being served or sent: the connection waits on its client."""
        return not (
            self.requests or self.total_outbufs_len or self.will_close or self.close_when_flushed
        )

    def waited(self, now: float) -> float:
        """How long the connection has waited on its client: for its current request to
        arrive, for a next one, or (closing) to read the answer and close its side."""
        if self.lingering:
            return now - self.linger_started
        return now - (self.request_started if self.request is not None else self.idle_since)

    def received(self, data: bytes) -> bool:
        if data:
            self.heard = True
        if self.request is None and data:
            self.request_started = time.monotonic()  # the first byte of a new request
        done: bool = super().received(data)
        return done

    def handle_write(self) -> None:
        super().handle_write()
        if self.socket is not None and not self.requests and not self.total_outbufs_len:
            self.idle_since = time.monotonic()

    def time_out(self) -> None:
        """A request that did not arrive whole in time: 408, then a lingering close."""
        with self.outbuf_lock:
            self.outbufs[-1].append(TIMEOUT_ANSWER)
            self.total_outbufs_len += len(TIMEOUT_ANSWER)
        self.request = None
        self.close_when_flushed = True

    # --- closing politely ---------------------------------------------------------------

    def readable(self) -> bool:
        return True if self.lingering else bool(super().readable())

    def writable(self) -> bool:
        return False if self.lingering else bool(super().writable())

    def recv(self, buffer_size: int) -> bytes:
        try:
            data: bytes = super().recv(buffer_size)
        except BlockingIOError:
            raise _StaleReadiness from None
        return data

    def handle_read(self) -> None:
        if not self.lingering:
            # One poll reports readiness for a whole round: a connection closed in it
            # (evicted) frees its descriptor, a connection accepted next takes the same
            # one, and the round's event for the old one reaches the new one. Nothing to
            # read yet; waitress would call it a socket error and close it.
            with contextlib.suppress(_StaleReadiness):
                super().handle_read()
            return
        try:
            data = self.socket.recv(65536)
        except OSError:
            data = b""
        self.lingered += len(data)
        assert self.linger_until is not None
        if not data or self.lingered > LINGER_BYTES or time.monotonic() > self.linger_until:
            self.close_now()

    def handle_close(self) -> None:
        """Close the sending half and drop what the client still sends, then close; at
        once when something is being served or the socket is already gone."""
        if self.lingering or self.requests or self.socket is None:
            self.close_now()
            return
        try:
            self.socket.shutdown(socket.SHUT_WR)
        except OSError:
            self.close_now()
            return
        self.linger_started = time.monotonic()
        self.linger_until = self.linger_started + LINGER_SECONDS

    def close_now(self) -> None:
        HTTPChannel.handle_close(self)

    def evictable(self, now: float) -> bool:
        return (self.waiting or self.lingering) and self.waited(now) > EVICT_AFTER

    # --- the server's count of connections per client -----------------------------------

    def add_channel(self, map: Any = None) -> None:
        super().add_channel(map)
        self.server.by_client.setdefault(self.client, set()).add(self)

    def del_channel(self, map: Any = None) -> None:
        super().del_channel(map)
        mine = self.server.by_client.get(self.client)
        if mine is not None:
            mine.discard(self)
            if not mine:
                del self.server.by_client[self.client]


class GuardedServer(TcpWSGIServer):  # type: ignore[misc]
    """Accepts whatever the number of slow sockets, making room by evicting the
    connection that has waited longest on its client (see the module doc)."""

    channel_class = GuardedChannel
    next_channel_cleanup: float = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.by_client: dict[str, set[GuardedChannel]] = {}
        self.full_until = 0.0
        self.no_room_until = 0.0  # a look found nobody to evict: not again before then
        # Connections let in past the limit before they had sent anything, oldest first.
        self.silent: deque[GuardedChannel] = deque()
        super().__init__(*args, **kwargs)

    def readable(self) -> bool:
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        # At the limit with nobody to evict yet (all too young): the kernel queues new
        # connections until someone can give theirs up, within EVICT_AFTER.
        return bool(self.accepting) and time.monotonic() >= self.full_until

    def handle_accept(self) -> None:
        limit = self.adj.connection_limit
        for _ in range(ACCEPT_BATCH):
            full = len(self._map) >= limit and not self._make_room()
            if full and len(self._map) >= limit + RESERVE:
                self.full_until = time.monotonic() + FULL_REST
                return
            try:
                accepted = self.accept()
            except OSError:
                return
            if accepted is None:
                return
            conn, addr = accepted
            admitted = self._admit_past_the_limit(conn, len(self._map) - limit) if full else WHOLE
            if admitted is None:
                conn.close()
                continue
            client = addr[0] if isinstance(addr, tuple) else str(addr)
            mine = self.by_client.get(client, set())
            if len(mine) >= PER_CLIENT_CONNECTIONS and not self._evict_from(mine):
                conn.close()  # every connection of this client is younger than EVICT_AFTER
                continue
            try:
                self.set_socket_options(conn)
            except OSError:
                conn.close()
                continue
            channel = self.channel_class(self, conn, self.fix_addr(addr), self.adj, map=self._map)
            if admitted is SILENT:
                self.silent.append(channel)

    def maintenance(self, now: float) -> None:
        super().maintenance(now)  # idle connections past channel_timeout
        self.silent = deque(c for c in self.silent if c.socket is not None and not c.heard)
        mono = time.monotonic()
        for channel in list(self.active_channels.values()):
            if not isinstance(channel, GuardedChannel):
                continue
            if channel.lingering and channel.linger_until is not None:
                if mono > channel.linger_until:
                    channel.close_now()
            elif (
                channel.request is not None
                and channel.waiting
                and mono - channel.request_started > REQUEST_SECONDS
            ):
                channel.time_out()

    def _make_room(self) -> bool:
        """Evict the ACCEPT_BATCH connections that have waited longest on their clients
        (over EVICT_AFTER: none has before it had time to send its request or read its
        answer); whether any was."""
        now = time.monotonic()
        if now < self.no_room_until:
            return False
        channels = [c for c in self.active_channels.values() if isinstance(c, GuardedChannel)]
        candidates = [c for c in channels if c.evictable(now)]
        candidates.sort(key=lambda c: c.waited(now), reverse=True)
        for victim in candidates[:ACCEPT_BATCH]:
            victim.close_now()
        if not candidates:
            self.no_room_until = now + FULL_REST
        return bool(candidates)

    def _admit_past_the_limit(self, conn: socket.socket, past: int) -> str | None:
        """With nobody to evict: a whole request comes in (into the reserve), as does a
        connection that has sent nothing yet (into half of it: when that half is full, the
        oldest of those still silent gives its place, since a client that means to send
        sends at once); part of a request that stopped does not. None: refused."""
        try:
            conn.setblocking(False)
            data = conn.recv(PEEK_BYTES, socket.MSG_PEEK)
        except BlockingIOError:
            data = b""
        except OSError:
            return None
        arrived = request_arrived(data)
        if arrived is None:
            return SILENT if past < RESERVE // 2 or self._evict_silent() else None
        return WHOLE if arrived else None

    def _evict_silent(self) -> bool:
        """Close the oldest connection let in past the limit that has still sent nothing."""
        while self.silent:
            channel = self.silent.popleft()
            if channel.socket is not None and not channel.heard:
                channel.close_now()
                return True
        return False

    def _evict_from(self, mine: set[GuardedChannel]) -> bool:
        """Evict the one of a client's connections that has waited longest, if any may be."""
        now = time.monotonic()
        candidates = [c for c in mine if c.evictable(now)]
        if not candidates:
            return False
        max(candidates, key=lambda c: c.waited(now)).close_now()
        return True
