"""The HTTP front of the real `gpu-bot serve` process under attack: oversized and slow
bodies, malformed signed payloads, replays, and a Redis that stops answering."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import redis

from bot.adapters.slack.inbound import MAX_BODY_BYTES
from bot.blocks.ids import CallbackId, FormBlock
from bot.http_guard import PER_CLIENT_CONNECTIONS
from tests import slack_payloads as payloads
from tests.conftest import free_port, start_redis_server
from tests.serving import serve_env
from tests.slack_fake import FakeSlack

SECRET = "serve-test-secret"


@dataclass
class Served:
    base: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def post(
        self,
        body: str | bytes,
        ctype: str,
        signed: bool = True,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str, float]:
        """(status, body, seconds) of a POST to /slack/events."""
        raw = body.encode() if isinstance(body, str) else body
        sent = {"Content-Type": ctype, **(headers or {})}
        if signed:
            sent |= _sign_bytes(raw)
        request = urllib.request.Request(
            f"{self.base}/slack/events", data=raw, headers=sent, method="POST"
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return reply.status, reply.read().decode(), time.monotonic() - started
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(), time.monotonic() - started

    def health(self) -> tuple[int, float]:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"{self.base}/healthz", timeout=10) as reply:
                return reply.status, time.monotonic() - started
        except urllib.error.HTTPError as exc:
            return exc.code, time.monotonic() - started

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _sign_bytes(raw: bytes, timestamp: str | None = None) -> dict[str, str]:
    """Slack's signature over the raw bytes (which need not be UTF-8)."""
    ts = timestamp or str(int(time.time()))
    base = b"v0:" + ts.encode() + b":" + raw
    digest = hmac.new(SECRET.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


@pytest.fixture
def serve(
    fake_slack: FakeSlack, namespace: str, tmp_path: Path
) -> Iterator[Callable[[str], Served]]:
    started: list[Served] = []

    def start(redis_url: str) -> Served:
        port = free_port()
        log = tmp_path / f"serve-{port}.log"
        env = serve_env(
            fake_slack.api_url,
            SLACK_SIGNING_SECRET=SECRET,
            REDIS_URL=redis_url,
            GPU_BOT_NAMESPACE=namespace,
        )
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bot", "serve", "--port", str(port), "--workers", "1"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        served = Served(f"http://127.0.0.1:{port}", port, proc, log)
        started.append(served)
        for _ in range(300):
            try:
                if served.health()[0] == 200:
                    return served
            except OSError:
                time.sleep(0.05)
        pytest.fail(f"gpu-bot serve did not come up:\n{served.output()}")

    yield start
    for served in started:
        served.proc.send_signal(signal.SIGTERM)
        try:
            served.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            served.proc.kill()
            served.proc.wait()


@pytest.fixture
def served(serve: Callable[[str], Served], redis_url: str) -> Served:
    return serve(redis_url)


def _raw_request(port: int, head: bytes, timeout: float = 5) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        chunks = []
        while True:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)


# --- size -------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_refused_before_it_is_read(served: Served) -> None:
    started = time.monotonic()
    head = (
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: 300000000\r\n\r\n" + b"a" * 1000
    )
    answer = _raw_request(served.port, head)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert time.monotonic() - started < 3  # nothing like 300 MB was waited for
    assert served.health()[0] == 200


def test_the_limit_leaves_room_for_the_largest_slack_payload(served: Served) -> None:
    # A 100-block modal (views.open allows 250 kB) submitted back, form-encoded.
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "&" * 2400}}] * 100
    body, ctype = payloads.view_submission("unknown_form", {}, "U0REQUESTER")
    data = json.loads(dict(urllib.parse.parse_qsl(body))["payload"])
    data["view"]["blocks"] = blocks
    big = urlencode({"payload": json.dumps(data)})
    assert 250_000 < len(big) < MAX_BODY_BYTES
    status, _, _ = served.post(big, ctype)
    assert status in (200, 404)  # Bolt's answer for a form nobody listens to; not 413


# --- slow bodies ------------------------------------------------------------------------


def _trickle(port: int, stop: threading.Event, opened: list[socket.socket]) -> None:
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return
    opened.append(sock)
    sock.sendall(
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\n"
    )
    while not stop.wait(2.0):
        try:
            sock.sendall(b"a")
        except OSError:
            return


@pytest.mark.alone
def test_slow_bodies_leave_signed_acks_and_healthz_answering(served: Served) -> None:
    stop = threading.Event()
    opened: list[socket.socket] = []
    senders = [
        threading.Thread(target=_trickle, args=(served.port, stop, opened), daemon=True)
        for _ in range(200)
    ]
    try:
        for sender in senders:
            sender.start()
        time.sleep(3)  # every slow connection has its headers in and holds on
        assert len(opened) >= 190
        acks, healths = [], []
        for i in range(10):
            body, ctype = payloads.slash_command(
                "help", "U0REQUESTER", "http://127.0.0.1:9/", trigger_id=f"T-{i}"
            )
            status, text, seconds = served.post(body, ctype)
            assert status == 200 and "gpu-bot" in text
            acks.append(seconds)
            code, seconds = served.health()
            assert code == 200
            healths.append(seconds)
        print(
            f"\nwith 200 slow connections: ack median {statistics.median(acks):.3f}s "
            f"max {max(acks):.3f}s; healthz median {statistics.median(healths):.3f}s "
            f"max {max(healths):.3f}s"
        )
        assert max(acks) < 3.0
        assert max(healths) < 3.0
    finally:
        stop.set()
        for sock in opened:
            sock.close()


# --- malformed ----------------------------------------------------------------------------


def _payload(data: object) -> str:
    return urlencode({"payload": json.dumps(data)})


def _deep(levels: int) -> str:
    return '{"type":"block_actions","user":{"id":"U1"},"x":' + "[" * levels + "]" * levels + "}"


def _click(**changes: object) -> str:
    body, _ = payloads.button_click("approve", "R1", "U0APPROVER", "http://127.0.0.1:9/")
    data = json.loads(dict(urllib.parse.parse_qsl(body))["payload"])
    data.update(changes)
    return _payload(data)


def _view(**changes: object) -> str:
    body, _ = payloads.view_submission(CallbackId.REJECT.value, {}, "U0APPROVER")
    data = json.loads(dict(urllib.parse.parse_qsl(body))["payload"])
    data["view"].update(changes)
    return _payload(data)


FORM = "application/x-www-form-urlencoded"
MALFORMED = {
    "payload is not JSON": (urlencode({"payload": "{not json"}), FORM),
    "invalid UTF-8": (b"payload=%7B%22type%22" + b"\xff\xfe", FORM),
    "deep nesting": (urlencode({"payload": _deep(100_000)}), FORM),
    "JSON content type, form body": (
        urlencode({"command": "/gpu", "text": "x"}),
        "application/json",
    ),
    "slash command without user_id": (
        urlencode({"command": "/gpu", "text": "help", "team_id": "T1"}),
        FORM,
    ),
    "click with empty actions": (_click(actions=[]), FORM),
    "list where the user object belongs": (_click(user=["U0APPROVER"]), FORM),
    "list where the payload object belongs": (_payload([1, 2]), FORM),
    "list where the view state belongs": (_view(state=[]), FORM),
    "event that is a list": ("[]", "application/json"),
    "app_home_opened with a null user": payloads.event({"type": "app_home_opened", "user": None}),
    "app_home_opened with an integer user": payloads.event({"type": "app_home_opened", "user": 7}),
    "app_home_opened without a user": payloads.event({"type": "app_home_opened", "tab": "home"}),
    "app_home_opened with a list for its tab": payloads.event(
        {"type": "app_home_opened", "user": "U1", "tab": ["home"]}
    ),
    "another event with an integer user": payloads.event({"type": "message", "user": 7}),
    "app_home_opened with a 10,000-character user id": payloads.event(
        {"type": "app_home_opened", "user": "U" + "A" * 9_999}
    ),
    "slash command with a 10,000-character user_id": payloads.slash_command(
        "help", "U" + "A" * 9_999, "http://127.0.0.1:9/"
    ),
    "click by a 10,000-character user id": (_click(user={"id": "U" + "A" * 9_999}), FORM),
    "click by a user id that is a formula": (_click(user={"id": "=HYPERLINK(1)"}), FORM),
    "authorizations that is text": (
        json.dumps(
            {
                **json.loads(payloads.event({"type": "app_home_opened", "user": "U1"})[0]),
                "authorizations": "x",
            }
        ),
        "application/json",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED), ids=list(MALFORMED))
def test_malformed_requests_get_401_unsigned_and_400_signed_without_a_traceback(
    served: Served, case: str
) -> None:
    body, ctype = MALFORMED[case]
    assert served.post(body, ctype, signed=False)[0] == 401
    status, text, _ = served.post(body, ctype)
    assert status == 400, text
    assert "error" in json.loads(text)
    assert served.health()[0] == 200
    assert "Traceback" not in served.output()


def test_a_signed_event_with_a_10000_character_user_id_is_refused_saying_why(
    served: Served,
) -> None:
    body, ctype = payloads.event({"type": "app_home_opened", "user": "U" + "A" * 9_999})
    status, text, _ = served.post(body, ctype)
    assert status == 400
    error = json.loads(text)["error"]
    assert "is not a Slack user id" in error and "at most 32 characters" in error, error
    assert "this one has 10000" in error and "AAAAAAAAAA" not in error
    body, ctype = payloads.event({"type": "app_home_opened", "user": "U0REQUESTER"})
    assert served.post(body, ctype)[0] == 200


def test_a_signed_non_numeric_timestamp_gets_400(served: Served) -> None:
    body, ctype = payloads.slash_command("help", "U0REQUESTER", "http://127.0.0.1:9/")
    signature = payloads.sign(SECRET, body)["X-Slack-Signature"]
    # Signed over this very timestamp: the signature is right, the timestamp is not a time.
    from slack_sdk.signature import SignatureVerifier

    signature = SignatureVerifier(SECRET).generate_signature(timestamp="soon", body=body)
    headers = {"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": signature}
    assert served.post(body, ctype, signed=False, headers=headers)[0] == 400
    headers["X-Slack-Signature"] = "v0=" + "0" * 64
    assert served.post(body, ctype, signed=False, headers=headers)[0] == 401
    assert "Traceback" not in served.output()


# --- replays ------------------------------------------------------------------------------


def test_a_replayed_signed_command_is_dropped(
    served: Served, fake_slack: FakeSlack, redis_url: str, namespace: str
) -> None:
    body, ctype = payloads.slash_command(
        "reserve 2x p5.48xlarge 3d from 2026-12-14 ec2",
        "U0REQUESTER",
        fake_slack.response_url("replay"),
    )
    headers = payloads.sign(SECRET, body)
    answers = [served.post(body, ctype, signed=False, headers=headers) for _ in range(10)]
    assert [a[0] for a in answers] == [200] * 10
    # Answered in its ack (the same answer each time); the intake stores its job once.
    assert all("Comparing options" in a[1] for a in answers)
    fake_slack.wait_for("response_url", 1, timeout=20)
    time.sleep(1)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    requests = list(client.scan_iter(match="{" + namespace + "}:req:*"))
    assert len(requests) == 1
    assert len(fake_slack.of("response_url")) == 1
    # A new request (new timestamp, new signature) still goes through.
    later = payloads.sign(SECRET, body, int(headers["X-Slack-Request-Timestamp"]) + 1)
    again = served.post(body, ctype, signed=False, headers=later)
    assert "Comparing options" in again[1]
    fake_slack.wait_for("response_url", 2, timeout=20)

    # A command that reads the store before answering is dropped at the front.
    status, status_type = payloads.slash_command(
        "status R1", "U0REQUESTER", fake_slack.response_url("status")
    )
    signed = payloads.sign(SECRET, status)
    first, replayed = (
        served.post(status, status_type, signed=False, headers=signed) for _ in range(2)
    )
    assert first[0] == replayed[0] == 200
    fake_slack.wait_for("response_url", 3, timeout=20)
    time.sleep(1)
    assert len(fake_slack.of("response_url")) == 3  # two comparisons, one status answer


# --- a hung Redis -------------------------------------------------------------------------


@pytest.mark.alone
def test_a_hung_redis_gets_an_answer_within_slacks_limit_and_healthz_says_503(
    serve: Callable[[str], Served],
) -> None:
    proc, url, _port, _dir = start_redis_server()
    try:
        served = serve(url)
        proc.send_signal(signal.SIGSTOP)  # accepts connections, answers nothing
        values = {FormBlock.REJECT_REASON.value: payloads.text_input("over budget")}
        body, ctype = payloads.view_submission(
            CallbackId.REJECT.value, values, "U0APPROVER", json.dumps({"request": "R1"})
        )
        status, text, seconds = served.post(body, ctype)
        assert status == 200
        assert seconds < 3.0
        answer = json.loads(text)
        assert answer["response_action"] == "errors"
        assert "could not reach its database" in answer["errors"][FormBlock.REJECT_REASON.value]
        command, ctype = payloads.slash_command("status", "U0REQUESTER", "http://127.0.0.1:9/")
        status, text, seconds = served.post(command, ctype)
        assert status == 200 and seconds < 3.0
        assert "could not reach its database" in json.loads(text)["text"]
        code, seconds = served.health()
        assert code == 503 and seconds < 2.0
        print(f"\nhung Redis: healthz 503 in {seconds:.2f}s")
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=10)


# --- many slow clients ----------------------------------------------------------------------


class SlowClients:
    """`count` connections that send their headers, then a body byte every `every`
    seconds, from the given source addresses (127.0.0.x: distinct clients to the
    server); each one the server closes is opened again, as a determined client would."""

    HEAD = (
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\n"
    )

    def __init__(self, port: int, count: int, sources: list[str], every: float) -> None:
        self.port, self.count, self.sources, self.every = port, count, sources, every
        self.stop = threading.Event()
        self.opened = 0
        self.closed_by_server = 0
        self.open: dict[int, socket.socket] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self, i: int) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.bind((self.sources[i % len(self.sources)], 0))
        with contextlib.suppress(BlockingIOError):
            sock.connect(("127.0.0.1", self.port))
        self.open[sock.fileno()] = sock
        self.opened += 1

    def _run(self) -> None:
        import selectors

        picker = selectors.DefaultSelector()
        for i in range(self.count):
            self._connect(i)
        sent_head: set[int] = set()
        next_byte = time.monotonic() + self.every
        while not self.stop.is_set():
            for fd, sock in list(self.open.items()):
                if fd in sent_head:
                    continue
                try:
                    sock.send(self.HEAD)
                    sent_head.add(fd)
                    picker.register(sock, selectors.EVENT_READ)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    self._replace(fd, sent_head, picker)
            for key, _ in picker.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    gone = sock.recv(65536) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    self.closed_by_server += 1
                    self._replace(sock.fileno(), sent_head, picker)
            if time.monotonic() >= next_byte:
                next_byte += self.every
                for fd, sock in list(self.open.items()):
                    if fd in sent_head:
                        try:
                            sock.send(b"a")
                        except OSError:
                            self._replace(fd, sent_head, picker)
        for sock in self.open.values():
            sock.close()

    def _replace(self, fd: int, sent_head: set[int], picker: Any) -> None:
        sock = self.open.pop(fd, None)
        sent_head.discard(fd)
        if sock is not None:
            with contextlib.suppress(KeyError, ValueError):
                picker.unregister(sock)
            sock.close()
        if not self.stop.is_set():
            self._connect(self.opened)


def _acks_and_health(served: Served, rounds: int) -> tuple[list[float], list[float]]:
    acks, healths = [], []
    for i in range(rounds):
        body, ctype = payloads.slash_command(
            "help", "U0REQUESTER", "http://127.0.0.1:9/", trigger_id=f"T-{i}"
        )
        status, text, seconds = served.post(body, ctype)
        assert status == 200 and "gpu-bot" in text
        acks.append(seconds)
        code, seconds = served.health()
        assert code == 200
        healths.append(seconds)
        time.sleep(0.3)
    return acks, healths


@pytest.mark.alone
@pytest.mark.parametrize(
    "clients", [pytest.param(1, id="one client"), pytest.param(100, id="a hundred clients")]
)
def test_thousands_of_slow_connections_leave_room_for_signed_requests(
    served: Served, clients: int
) -> None:
    # 2,100 connections sending a body byte every 10 s, more than the 1,000 a process
    # holds: from one client address (it may hold 64 that wait on it), or from a hundred
    # (past the connection limit, those that waited longest make room).
    sources = [f"127.0.0.{2 + n}" for n in range(clients)]
    slow = SlowClients(served.port, 2100, sources, every=10.0)
    slow.thread.start()
    try:
        time.sleep(4)  # every slow connection is open or was, and they keep coming
        acks, healths = _acks_and_health(served, 15)
        print(
            f"\n2,100 slow connections from {clients} client(s): opened {slow.opened}, "
            f"closed by the server {slow.closed_by_server}; signed ack median "
            f"{statistics.median(acks) * 1000:.0f} ms max {max(acks) * 1000:.0f} ms; healthz "
            f"median {statistics.median(healths) * 1000:.0f} ms max {max(healths) * 1000:.0f} ms"
        )
        assert max(acks) < 3.0 and max(healths) < 3.0
        assert slow.closed_by_server > 0  # the slow ones gave up their place
    finally:
        slow.stop.set()
        slow.thread.join(timeout=30)
    assert "Traceback" not in served.output()


def test_one_client_address_holds_at_most_its_share_of_connections(served: Served) -> None:
    # Opened at once, so none is old enough to give its place up: past the share, the
    # server closes the newcomers from that address; another address is served as before.
    held = []
    for _ in range(PER_CLIENT_CONNECTIONS + 16):
        sock = socket.create_connection(("127.0.0.1", served.port), source_address=("127.0.0.9", 0))
        sock.sendall(SlowClients.HEAD)
        held.append(sock)
    try:
        time.sleep(0.5)  # the server has looked at every one
        open_ = 0
        for sock in held:
            sock.settimeout(0.05)
            try:
                open_ += sock.recv(1) != b""
            except TimeoutError:
                open_ += 1  # nothing to read: still open, waiting for the body
            except OSError:
                pass  # reset: closed
        assert open_ == PER_CLIENT_CONNECTIONS
        body, ctype = payloads.slash_command("help", "U0REQUESTER", "http://127.0.0.1:9/")
        status, text, _ = served.post(body, ctype)
        assert status == 200 and "gpu-bot" in text
    finally:
        for sock in held:
            sock.close()


@pytest.mark.long
def test_a_request_that_does_not_arrive_in_time_is_answered_408_and_closed(served: Served) -> None:
    started = time.monotonic()
    head = (
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 50\r\n\r\nab"
    )
    answer = _raw_request(served.port, head, timeout=20)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert 9 < time.monotonic() - started < 15


def test_a_body_over_ten_megabytes_gets_413_and_a_polite_close(served: Served) -> None:
    body = b"a" * (12 * 1024 * 1024)
    head = (
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head)
        sent = 0
        try:
            while sent < len(body):  # as a client does: all of it, then the answer
                sent += sock.send(body[sent : sent + 65536])
        except BrokenPipeError:
            pass  # the server may close its reading half once it has dropped enough
        answer = b""
        while True:
            data = sock.recv(65536)  # ConnectionResetError here is what this test forbids
            if not data:
                break
            answer += data
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert served.health()[0] == 200


# --- what Slack sends besides commands, clicks and events ---------------------------------


def test_slacks_unsigned_ssl_check_gets_200_and_reaches_nothing(served: Served) -> None:
    # Slack checks a slash command's Request URL certificate with an unsigned form POST
    # (https://docs.slack.dev/interactivity/implementing-slash-commands/).
    status, text, _ = served.post(urlencode({"ssl_check": "1", "token": "x"}), FORM, signed=False)
    assert (status, text) == (200, "")
    # Only the check itself: an unsigned command that also says ssl_check=1 is refused.
    sneaky = urlencode({"ssl_check": "1", "command": "/gpu", "text": "help"})
    assert served.post(sneaky, FORM, signed=False)[0] == 401
    assert "Traceback" not in served.output()


def test_the_app_rate_limited_envelope_gets_200(served: Served) -> None:
    # https://docs.slack.dev/apis/events-api/#rate-limiting: an envelope of its own type.
    notice = {
        "token": "legacy",
        "type": "app_rate_limited",
        "team_id": "T0GPUBOT",
        "minute_rate_limited": int(time.time()) // 60 * 60,
        "api_app_id": "A0GPUBOT",
    }
    status, _, _ = served.post(json.dumps(notice), "application/json")
    assert status == 200
    assert "over the Events API rate limit" in served.output()
    # Signed like every delivery: unsigned, it is refused.
    assert served.post(json.dumps(notice), "application/json", signed=False)[0] == 401
