"""`gpu-bot serve` as operators run it: a separate process, gunicorn, real Redis,
Slack's Web API faked. One signed slash command goes all the way through."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.store import RedisStore
from tests import slack_payloads as payloads
from tests.conftest import free_port
from tests.serving import serve_env
from tests.slack_fake import FakeSlack

SECRET = "serve-test-secret"


@pytest.fixture
def served(serve: Any) -> Iterator[str]:
    with serve() as (base, _proc):
        yield base


@pytest.fixture
def serve(redis_url: str, namespace: str, fake_slack: FakeSlack) -> Any:
    return lambda *extra, **env: _serve(redis_url, namespace, fake_slack, *extra, **env)


@contextmanager
def _serve(
    redis_url: str, namespace: str, fake_slack: FakeSlack, *extra: str, **more_env: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    env = serve_env(
        fake_slack.api_url,
        SLACK_SIGNING_SECRET=SECRET,
        REDIS_URL=redis_url,
        GPU_BOT_NAMESPACE=namespace,
        **more_env,
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "serve", "--port", str(port), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        else:
            proc.kill()
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"gpu-bot serve did not come up:\n{out}")
        yield base, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_serve_answers_a_signed_command_end_to_end(served: str, fake_slack: FakeSlack) -> None:
    body, ctype = payloads.slash_command(
        "reserve 2x p5.48xlarge 3d from 2026-12-14 ec2",
        "U0REQUESTER",
        fake_slack.response_url("e2e"),
    )
    headers = {"Content-Type": ctype, **payloads.sign(SECRET, body)}
    request = urllib.request.Request(
        f"{served}/slack/events", data=body.encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as reply:
        assert reply.status == 200
        assert "Comparing options" in reply.read().decode()
    (answer,) = fake_slack.wait_for("response_url", 1, timeout=20)
    assert "Recommended" in json.dumps(answer.args["blocks"])


def test_serve_runs_several_processes_and_stops_cleanly_on_sigterm(
    serve: Any, fake_slack: FakeSlack, redis_store: RedisStore
) -> None:
    with serve("--workers", "2") as (base, proc):
        # gunicorn's master forks two worker processes; the first may answer /healthz
        # before the second is forked.
        children_of = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 20
        while len(children_of.read_text().split()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(children_of.read_text().split()) == 2
        body, ctype = payloads.slash_command(
            "reserve 2x p5.48xlarge 3d from 2026-12-14 ec2",
            "U0REQUESTER",
            fake_slack.response_url("w2"),
        )
        headers = {"Content-Type": ctype, **payloads.sign(SECRET, body)}
        request = urllib.request.Request(
            f"{base}/slack/events", data=body.encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            assert reply.status == 200
        fake_slack.wait_for("response_url", 1, timeout=20)  # a job worker quoted it
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert redis_store.redis.zcard(redis_store.key("inflight")) == 0


def test_serve_rejects_an_unsigned_request(served: str) -> None:
    body, ctype = payloads.slash_command("help", "U0REQUESTER", "http://127.0.0.1:9/")
    request = urllib.request.Request(
        f"{served}/slack/events", data=body.encode(), headers={"Content-Type": ctype}, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 401


def test_serve_refuses_to_start_without_what_it_needs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GPU_BOT_"))}
    done = subprocess.run(
        [sys.executable, "-m", "bot", "serve"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 1
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "GPU_BOT_APPROVERS",
        "GPU_BOT_APPROVAL_CHANNEL",
    ):
        assert name in done.stderr


def _post(base: str, body: str, ctype: str) -> int:
    headers = {"Content-Type": ctype, **payloads.sign(SECRET, body)}
    request = urllib.request.Request(
        f"{base}/slack/events", data=body.encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as reply:
        return int(reply.status)


def _scrape(base: str) -> str:
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as reply:
        assert reply.status == 200
        return str(reply.read().decode())


def test_json_logs_cover_gunicorns_own_lines(serve: Any) -> None:
    with serve(GPU_BOT_LOG_FORMAT="json") as (_base, proc):
        master = proc.pid
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        os.kill(int(children[0]), signal.SIGKILL)  # gunicorn says so, and starts another
        time.sleep(1.5)
    out = proc.stdout.read().decode() if proc.stdout else ""
    lines = []
    for text in out.splitlines():
        if not text.strip():
            continue
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError:
            # All JSON, but for a line the killed worker was writing when it died: a
            # JSON object cut short (the pipe keeps what was written before the kill).
            assert text.startswith('{"'), text
    said = [line for line in lines if line["logger"].startswith("gunicorn")]
    assert any("SIGKILL" in line["message"] for line in said), out


def _metrics_status(base: str, authorization: str | None) -> int:
    headers = {"Authorization": authorization} if authorization else {}
    request = urllib.request.Request(f"{base}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as refused:
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        return refused.code


def test_metrics_answer_only_the_bearer_of_the_token_when_one_is_set(serve: Any) -> None:
    with serve(GPU_BOT_METRICS_TOKEN="scrape-secret") as (base, _proc):
        for refused in (None, "Bearer wrong", "Basic scrape-secret", "Bearer scrape-secre"):
            assert _metrics_status(base, refused) == 401, refused
        assert _metrics_status(base, "Bearer scrape-secret") == 200
        assert _metrics_status(base, "bearer  scrape-secret") == 200


def test_metrics_of_every_process_move_with_a_scripted_approval(
    serve: Any, fake_slack: FakeSlack
) -> None:
    """Two gunicorn worker processes answer; each scrape adds up both (multiprocess
    files), read while the processes write them: every scrape answers 200."""
    import threading

    from bot.blocks.ids import ActionId, CallbackId, FormBlock
    from tests.integration.test_metrics import samples, total, value

    with serve("--workers", "2") as (base, _proc):
        failures: list[str] = []
        scrapes = [0]
        stop = threading.Event()

        def keep_scraping() -> None:
            while not stop.is_set():
                try:
                    _scrape(base)
                    scrapes[0] += 1
                except Exception as exc:
                    failures.append(repr(exc))

        scraper = threading.Thread(target=keep_scraping, daemon=True)
        scraper.start()
        try:
            before = samples(_scrape(base))
            command = payloads.slash_command(
                "reserve 2x p5.48xlarge 3d from 2026-12-14 ec2",
                "U0REQUESTER",
                fake_slack.response_url("m1"),
            )
            assert _post(base, *command) == 200
            (answer,) = fake_slack.wait_for("response_url", 1, timeout=20)
            request_id = next(
                e["value"]
                for b in answer.args["blocks"]
                if b.get("type") == "actions"
                for e in b["elements"]
                if e["action_id"] == ActionId.SUBMIT_OPEN.value
            )
            form = payloads.view_submission(
                CallbackId.SUBMIT.value,
                {
                    FormBlock.CHOICE.value: payloads.select("capacity-block:0"),
                    FormBlock.REASON.value: payloads.text_input("load test"),
                },
                "U0REQUESTER",
                json.dumps({"request": request_id, "response_url": fake_slack.response_url("m2")}),
            )
            assert _post(base, *form) == 200
            fake_slack.wait_for("chat.postMessage", 1, timeout=20)  # the approval card
            click = payloads.button_click(
                ActionId.APPROVE.value,
                request_id,
                "U0APPROVER",
                fake_slack.response_url("m3"),
                trigger_id="T-approve",
            )
            assert _post(base, *click) == 200
            # The bot puts the amount to the approver; the approver confirms it.
            (opened,) = fake_slack.wait_for("views.open", 1, timeout=20)
            confirm = payloads.view_submission(
                CallbackId.APPROVE.value, {}, "U0APPROVER", opened.view()["private_metadata"]
            )
            assert _post(base, *confirm) == 200
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                # The state is read from Redis; the counters move in the process that saved
                # it, just after the save: wait for both.
                after = samples(_scrape(base))
                bought = total(after, "gpu_bot_purchases_total") - total(
                    before, "gpu_bot_purchases_total"
                )
                if value(after, "gpu_bot_requests", state="payment_pending") == 1 and bought:
                    break
                time.sleep(0.1)
        finally:
            stop.set()
            scraper.join(10)
    assert failures == []
    assert scrapes[0] >= 5
    assert value(after, "gpu_bot_requests", state="payment_pending") == 1
    assert value(after, "gpu_bot_store_up") == 1
    assert value(after, "gpu_bot_metrics_files_unreadable") == 0

    def moved(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert moved("gpu_bot_approvals_total") == 1
    assert moved("gpu_bot_purchases_total", kind="capacity-block") == 1
    assert moved("gpu_bot_jobs_total", kind="quote", outcome="ok") == 1
    assert moved("gpu_bot_external_call_seconds_count", service="slack") >= 3


def test_worker_serves_metrics_on_its_port(
    redis_url: str, namespace: str, redis_store: RedisStore
) -> None:
    port = free_port()
    env = os.environ | {
        "REDIS_URL": redis_url,
        "GPU_BOT_NAMESPACE": namespace,
        "SLACK_BOT_TOKEN": "xoxb-test",  # a worker refuses to start without them
        "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        from tests.integration.test_metrics import samples, value

        page = ""
        for _ in range(200):
            try:
                page = _scrape(f"http://127.0.0.1:{port}")
                break
            except OSError:
                time.sleep(0.05)
        found = samples(page)
        assert value(found, "gpu_bot_store_up") == 1
        assert ("gpu_bot_jobs_due", ()) in found
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
