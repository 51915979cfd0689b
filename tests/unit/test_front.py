"""The HTTP front (bot.server.wsgi_app) in process: work a listener hands off waits for
the answer, commands answered in their ack skip the replay check (and only they: a
complete `/gpu reserve` or `/gpu quote` is among them, its job handed to the intake, which
drops replays; see tests/integration/test_intake.py), and a Bolt app that does not verify
signatures itself is still behind the front's check."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from slack_bolt import Ack, App
from slack_bolt.authorization import AuthorizeResult

from bot.adapters.clock import ManualClock
from bot.adapters.slack.inbound import MAX_BODY_BYTES
from bot.after_ack import AfterAck
from bot.app import build_services
from bot.config import load_settings
from bot.server import wsgi_app
from handlers.commands import answered_in_ack as answered_in_ack_by
from tests import slack_payloads as payloads
from tests.factories import NOW

SECRET = "front-test-secret"
_services = build_services(load_settings(REDIS_URL="memory://"), clock=ManualClock(NOW))
answered_in_ack = answered_in_ack_by(_services)


def _authorize(**_: Any) -> AuthorizeResult:
    return AuthorizeResult(
        enterprise_id=None, team_id="T0EXAMPLE", bot_user_id="UB", bot_id="B", bot_token="xoxb-x"
    )


def _app(listener: Callable[..., None]) -> App:
    # As serve builds it: the front verifies, Bolt does not again.
    app = App(
        signing_secret=SECRET,
        authorize=_authorize,
        process_before_response=True,
        request_verification_enabled=False,
    )
    app.command("/gpu")(listener)
    return app


def _environ(text: str, signed: bool = True, secret: str = SECRET) -> dict[str, Any]:
    body, ctype = payloads.slash_command(text, "U0REQUESTER", "http://127.0.0.1:9/")
    raw = body.encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/slack/events",
        "QUERY_STRING": "",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_TYPE": ctype,
        "CONTENT_LENGTH": str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
    }
    if signed:
        for name, value in payloads.sign(secret, body).items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def _call(
    application: Callable[..., Iterable[bytes]], environ: dict[str, Any]
) -> tuple[str, bytes, Iterable[bytes]]:
    started: list[str] = []
    result = application(environ, lambda status, _headers, *_: started.append(status))
    return started[0], b"".join(result), result


def _close(result: Iterable[bytes]) -> None:
    close = getattr(result, "close", None)
    if close is not None:
        close()


def test_handed_off_work_starts_only_once_the_answer_is_written() -> None:
    after = AfterAck()
    ran = threading.Event()

    def gpu(ack: Ack) -> None:
        after.run(ran.set)
        ack(text="ok")

    application = wsgi_app(_app(gpu), lambda: True, after, signing_secret=SECRET)
    status, body, result = _call(application, _environ("status"))
    assert status.startswith("200") and b"ok" in body
    assert not ran.wait(0.3)  # Bolt has answered, the server has not sent it yet
    _close(result)  # the server closes the body once the last byte is out
    assert ran.wait(5)
    after.shutdown()


class _CountedBody(io.BytesIO):
    """A request body that counts the bytes the application reads of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.bytes_read += len(chunk)
        return chunk


def _signed_command_of(size: int) -> dict[str, Any]:
    """A signed `/gpu status` whose form is padded to `size` bytes."""
    environ = _environ("status")
    body = environ["wsgi.input"].getvalue().decode()
    padded = body + "&pad=" + "a" * (size - len(body) - len("&pad="))
    environ |= {"wsgi.input": _CountedBody(padded.encode()), "CONTENT_LENGTH": str(size)}
    for name, value in payloads.sign(SECRET, padded).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def test_the_fronts_body_limit_refuses_a_larger_body_unread_whatever_the_server() -> None:
    """Waitress refuses a body over the limit before the front sees it; under any other
    WSGI server the front's own check is what stands: called directly here."""
    heard: list[str] = []
    application = wsgi_app(
        _app(lambda ack: (heard.append("x"), ack(text="answered"))),
        lambda: True,
        signing_secret=SECRET,
        first_sighting=lambda _key, _seconds: True,
    )
    over = _signed_command_of(MAX_BODY_BYTES + 1)
    status, body, _ = _call(application, over)
    assert status == "413 Payload Too Large"
    assert f"over {MAX_BODY_BYTES} bytes".encode() in body
    assert over["wsgi.input"].bytes_read == 0 and heard == []
    # At the limit exactly, the same signed request is read and answered.
    at_limit = _signed_command_of(MAX_BODY_BYTES)
    status, body, result = _call(application, at_limit)
    _close(result)
    assert status.startswith("200") and b"answered" in body
    assert at_limit["wsgi.input"].bytes_read == MAX_BODY_BYTES and heard == ["x"]


@pytest.mark.parametrize(("signed", "secret"), [(False, SECRET), (True, "another-secret")])
def test_without_bolts_own_check_a_bad_signature_still_gets_401(signed: bool, secret: str) -> None:
    heard: list[str] = []
    application = wsgi_app(
        _app(lambda ack: (heard.append("x"), ack())),
        lambda: True,
        signing_secret=SECRET,
        first_sighting=lambda _key, _seconds: True,
        answered_in_ack=answered_in_ack,
    )
    for text in ("help", "reserve 2x p5.48xlarge 3d from tomorrow"):
        status, _body, _ = _call(application, _environ(text, signed=signed, secret=secret))
        assert status.startswith("401")
    assert heard == []


def test_only_commands_answered_in_the_ack_skip_the_replay_check() -> None:
    sightings: list[str] = []

    def first_sighting(key: str, _seconds: int) -> bool:
        sightings.append(key)
        return len(sightings) == 1  # every signature after the first counts as a replay

    application = wsgi_app(
        _app(lambda ack: ack(text="answered")),
        lambda: True,
        signing_secret=SECRET,
        first_sighting=first_sighting,
        answered_in_ack=answered_in_ack,
    )
    for text in ("help", "", "mig check p4d.24xlarge 7g.40gb", "HELP"):
        for _ in range(2):  # the same signed request twice: the same answer
            status, body, result = _call(application, _environ(text))
            _close(result)
            assert status.startswith("200") and b"answered" in body
    assert sightings == []
    environ = _environ("status R1")
    replay = dict(environ, **{"wsgi.input": io.BytesIO(environ["wsgi.input"].getvalue())})
    first = _call(application, environ)
    again = _call(application, replay)
    assert b"answered" in first[1]
    assert again[0].startswith("200") and again[1] == b""  # dropped
    assert len(sightings) == 2


@pytest.mark.parametrize(
    ("text", "in_ack"),
    [
        ("help", True),
        ("", True),
        ("  Help  ", True),
        ("mig plan p4d.24xlarge llama=18gbx8", True),
        ("reserve 2x p5.48xlarge 3d from tomorrow", True),  # handed to the intake
        ("quote 2x p5.48xlarge 3d", True),
        ("quote 2x", True),  # answered with what is missing
        ("reserve 2x p5.48xlarge to mars", True),  # answered with the mistake
        ("reserve 2x p5.48xlarge", False),  # opens the form after the ack
        ("reserve", False),
        ("status R1", False),
        ("list", False),
        ("cancel R1", False),
        ("deploy R1", False),
        ("cleanup D1", False),
        ("helpme", False),
    ],
)
def test_which_commands_are_answered_in_their_ack(text: str, in_ack: bool) -> None:
    assert answered_in_ack({"command": "/gpu", "text": text}) is in_ack
    assert answered_in_ack({"command": "/other", "text": text}) is False


def test_a_call_past_its_deadline_answers_none_and_runs_what_follows_when_done() -> None:
    from bot.dispatch import Call

    go = threading.Event()
    followed = threading.Event()
    slow = Call(lambda: go.wait(5) and "late")
    assert slow.wait(0.05) is None  # the caller answers without it
    slow.then(followed.set)
    assert not followed.is_set()
    go.set()
    assert followed.wait(5)
    quick = Call(lambda: "now")
    assert quick.wait(5) == "now"
    quick.then(followed.clear)  # already over: runs at once
    assert not followed.is_set()
    failed = Call(lambda: 1 / 0)
    assert isinstance(failed.wait(5), ZeroDivisionError)


def test_the_dispatch_pool_reuses_its_threads_and_stays_within_its_size() -> None:
    from bot.dispatch import Call, Pool

    pool = Pool(3, "test-pool")
    names: set[str] = set()
    for _ in range(20):  # one after another: one thread serves them all
        assert Call(lambda: names.add(threading.current_thread().name), pool).wait(5) is None
    assert len(names) == 1
    release = threading.Event()
    running = threading.Semaphore(0)

    def block() -> str:
        running.release()
        release.wait(5)
        return "done"

    calls = [Call(block, pool) for _ in range(6)]
    for _ in range(3):
        assert running.acquire(timeout=5)
    assert not running.acquire(timeout=0.2)  # three at once; the rest wait their turn
    threads = {t.name for t in threading.enumerate() if t.name.startswith("test-pool")}
    assert len(threads) == 3
    release.set()
    assert [call.wait(5) for call in calls] == ["done"] * 6


def test_a_pool_thread_carries_no_log_fields_from_the_request_it_served_before() -> None:
    from bot.dispatch import Call, Pool
    from bot.logs import context, set_fields

    pool = Pool(1, "test-fields")  # one thread: the second call runs where the first did
    assert Call(lambda: set_fields(slack_user="U0BEFORE", request_id="R1"), pool).wait(5) is None
    assert Call(context, pool).wait(5) == {}


def test_a_first_look_tells_a_whole_request_from_part_of_one() -> None:
    from bot.http_guard import request_arrived

    head = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
    assert request_arrived(b"") is None  # nothing sent yet
    assert request_arrived(head[:20]) is False  # the headers are not all in
    assert request_arrived(head + b"ab") is False  # nor the body
    assert request_arrived(head + b"abcde") is True
    signed = head.replace(
        b"Host: x", b"Host: x\r\nX-Slack-Signature: v0=1\r\nX-Slack-Request-Timestamp: 1"
    )
    assert request_arrived(signed + b"ab") is True  # a large signed body may still be coming
    assert request_arrived(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") is True
