"""Shared fixtures: a real Redis for store tests, a fixed clock, fresh namespaces."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import botocore.client
import botocore.endpoint
import pytest
import redis

from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.adapters.store.connect import open_redis

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """Under pytest-xdist, a test marked `alone` (it measures its own acks against
    Slack's 3 seconds) runs while no other worker runs a test; the others share. Outside
    the test's own timeout, so waiting for the room does not count against it.

    Two flocks shared by the run's workers: every test passes the turnstile and holds
    the room shared; an `alone` test keeps the turnstile while it waits for the room to
    empty and holds it alone, so the others cannot keep it full for ever."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        yield
        return
    base = Path(tempfile.gettempdir()) / f"gpu-bot-tests-{run}"
    alone = item.get_closest_marker("alone") is not None
    with open(f"{base}.turnstile", "a") as turnstile, open(f"{base}.room", "a") as room:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)


# The tiers that only compute: one worker per core is their fastest.
_COMPUTING = ("tests/unit", "tests/services")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker per core for the fast tier, two for a run with the
    integration tests, which spend about 40% of their time waiting (on worker processes,
    sockets, Redis restarts): one per core left the cores idle that long (measured: 350 s
    against 285 s for the whole suite here). The latency tests run `alone` either way."""
    cores = os.cpu_count() or 1
    paths = [str(arg).split("::")[0].rstrip("/") for arg in config.args]
    computing = bool(paths) and all(p.startswith(_COMPUTING) for p in paths)
    return cores if computing else 2 * cores


@pytest.fixture(scope="session", autouse=True)
def _client_classes_built_once() -> Iterator[None]:
    """botocore builds a new class for every client it makes (a method and a docstring per
    operation: about 30 ms for EC2's 700), and the suite makes thousands of clients of a
    few services, a quarter of its CPU. Each class is built once per session and service
    here; the clients, their configuration, events and the sandbox or moto on them are
    still made per client, as the bot makes them."""
    original = botocore.client.ClientCreator._create_client_class
    built: dict[tuple[int, str, str], tuple[object, type]] = {}

    def once(self: Any, service_name: str, service_model: Any) -> type:
        emitter = self._event_emitter  # the session's: its handlers shape the class
        key = (id(emitter), service_name, service_model.api_version)
        if key not in built:  # the emitter is kept, so its id is never reused meanwhile
            built[key] = (emitter, original(self, service_name, service_model))
        return built[key][1]

    botocore.client.ClientCreator._create_client_class = once  # type: ignore[method-assign]
    yield
    botocore.client.ClientCreator._create_client_class = original  # type: ignore[method-assign]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long` first (in their order), the rest as collected: a 40 s test
    begun last is 40 s of a run with every other worker idle."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


class RetryPauses(list[float]):
    """The pauses botocore's retry handler asked for between attempts."""


@pytest.fixture(autouse=True)
def sdk_retry_pauses(monkeypatch: pytest.MonkeyPatch) -> RetryPauses:
    """botocore's retries run as they would live (the sandbox answers inside its retry
    loop), but the backoff between attempts is recorded rather than slept: botocore's
    endpoint sleeps through `time.sleep` and nothing else of `time`."""
    pauses = RetryPauses()

    class _Time:
        @staticmethod
        def sleep(seconds: float) -> None:
            pauses.append(seconds)

    monkeypatch.setattr(botocore.endpoint, "time", _Time)
    return pauses


def free_port() -> int:
    """A port nothing uses on any address (serve binds 0.0.0.0): one free on 127.0.0.1
    alone may still be held on 127.0.0.2 by a test's many client connections."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def start_redis_server(*extra: str, port: int | None = None, workdir: str | None = None):  # type: ignore[no-untyped-def]
    """A throwaway redis-server; returns (process, url, port, workdir)."""
    port = port or free_port()
    workdir = workdir or tempfile.mkdtemp(prefix="gpu-bot-redis-")
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            workdir,
            "--save",
            "",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        raise RuntimeError("redis-server did not start")
    return proc, url, port, workdir


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """REDIS_TEST_URL if it answers, else a throwaway redis-server for the session."""
    url = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/0")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
        yield url
        return
    except redis.ConnectionError:
        if not shutil.which("redis-server"):
            # Never skip: these tests guard the money and security rules.
            pytest.exit(
                f"no Redis answers at {url} and redis-server is not on PATH: start one "
                "(redis-server --port 6379) or set REDIS_TEST_URL=redis://HOST:PORT/DB",
                returncode=3,
            )
    proc, url, _port, _dir = start_redis_server()
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# Every namespace handed to a test, to check at the end that none left keys behind.
NAMESPACES: set[str] = set()


@pytest.fixture
def namespace() -> str:
    name = f"gpu-test-{uuid.uuid4().hex[:12]}"
    NAMESPACES.add(name)
    return name


def _keys_of(client: redis.Redis, namespace: str) -> list[bytes]:
    return list(client.scan_iter(match="{" + namespace + "}*", count=1000))


@pytest.fixture(autouse=True)
def _drop_the_namespace(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on the real Redis, its namespace's keys go, whoever wrote them (a
    served process, a worker process, the test itself)."""
    yield
    if "namespace" in request.fixturenames and "redis_url" in request.fixturenames:
        name = request.node.funcargs.get("namespace")
        url = request.node.funcargs.get("redis_url") or request.getfixturevalue("redis_url")
        client = redis.Redis.from_url(url)
        keys = _keys_of(client, name) if name else []
        if keys:
            client.delete(*keys)
        client.close()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test namespace still has keys: the test database is shared
    (one per developer, and CI's), and leftovers pile up run after run."""
    url = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/0")
    if not NAMESPACES:
        return
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        found = {
            key.decode().split("}", 1)[0].lstrip("{")
            for key in client.scan_iter(match="{gpu-test-*", count=1000)
        }
        left = sorted(found & NAMESPACES)
    except redis.ConnectionError:
        return  # a throwaway redis-server, gone with the session
    if left:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\ntest namespaces left keys in {url}: {', '.join(left[:10])}")


@pytest.fixture
def redis_store(redis_url: str, namespace: str) -> Iterator[RedisStore]:
    """A store on the real Redis, in a namespace of its own, removed afterwards."""
    store = RedisStore(open_redis(redis_url), namespace=namespace)
    yield store
    keys = list(store.redis.scan_iter(match="{" + namespace + "}*", count=1000))
    if keys:
        store.redis.delete(*keys)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def fake_slack() -> Iterator[object]:
    from tests.slack_fake import FakeSlack

    fake = FakeSlack(groups={"S0APPROVERS": ["U0GROUPAPPROVER"]})
    yield fake
    fake.close()


@pytest.fixture
def make_bot(fake_slack: object, redis_store: RedisStore, clock: ManualClock):  # type: ignore[no-untyped-def]
    """Build bots under test sharing one fake Slack, Redis namespace and clock (two bots
    are two replicas)."""
    from tests.iam_sandbox import SHIPPED_IAM
    from tests.slack_harness import BotUnderTest

    bots: list[BotUnderTest] = []

    def make(charts: object = None, iam: object = SHIPPED_IAM, **settings: object) -> BotUnderTest:
        store = RedisStore(redis_store.redis, namespace=redis_store.prefix.strip("{}"))
        bot = BotUnderTest(fake_slack, store, clock, charts, iam=iam, **settings)  # type: ignore[arg-type]
        bots.append(bot)
        return bot

    yield make
    for bot in bots:
        bot.close()
