"""The cost chart beside the approval card: drawn by a job after the card is posted,
shared once into the card's thread (Slack's three-step upload, against the fake Web API),
and, when Slack refuses it, logged and audited without holding up the card or the
decision."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest

from bot.adapters.charts.png import PNG_MAGIC, render_png_apart
from bot.domain.lifecycle import State
from bot.services.delivery import filename_of
from bot.services.notifications import chart_key
from tests.integration.test_slack_flow import quoted, submit_form, submitted
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, BotUnderTest

UPLOAD_STEPS = ("files.getUploadURLExternal", "upload", "files.completeUploadExternal")


def steps(bot: BotUnderTest) -> list[str]:
    return [c.method for c in bot.fake.calls if c.method in UPLOAD_STEPS]


def test_the_chart_is_shared_once_in_the_cards_thread(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(charts=render_png_apart)  # the real drawing, in its child process
    request_id = submitted(bot)
    card = bot.record(request_id).approval_message
    assert card is not None and card.channel == APPROVAL_CHANNEL
    (shared,) = bot.fake.shared_files()
    assert (shared.channel, shared.thread_ts) == (APPROVAL_CHANNEL, card.ts)
    assert shared.name == filename_of(chart_key(request_id)) == f"gpu-bot-chart-{request_id}.png"
    assert shared.title == f"{request_id}: total cost by expected utilisation"
    assert shared.data is not None and shared.data.startswith(PNG_MAGIC)
    assert steps(bot) == list(UPLOAD_STEPS)
    # The thread shows it (what the bot looks at after an uncertain outcome).
    thread = bot.services.slack.conversations_replies(channel=card.channel, ts=card.ts)
    assert [f["name"] for m in thread["messages"] for f in m.get("files", [])] == [shared.name]
    # Deciding updates the card; the chart is not shared again.
    bot.approve(request_id, APPROVER)
    bot.wait()
    assert bot.record(request_id).state is not State.PENDING_APPROVAL
    assert len(bot.fake.shared_files()) == 1
    assert steps(bot) == list(UPLOAD_STEPS)


def test_the_chart_is_drawn_by_a_job_after_the_card_not_in_the_ack(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = quoted(bot)
    reply = submit_form(bot, request_id)
    assert reply.status == 200
    assert steps(bot) == []  # the ack came back before anything was drawn or uploaded
    jobs = bot.services.store
    bot.services.after_ack.wait_idle(10)
    assert steps(bot) == []
    # The card job schedules the chart in the same step that records the card.
    bot.worker.drain()
    bot.wait()
    assert bot.record(request_id).approval_message is not None
    assert len(bot.fake.shared_files()) == 1
    assert jobs.next_due() is None or not jobs.next_due()[0].startswith("chart:")  # type: ignore[index]


@pytest.mark.parametrize("fault", ["files.completeUploadExternal", "upload"])
def test_a_share_with_an_unknown_outcome_is_looked_for_not_repeated(
    make_bot,  # type: ignore[no-untyped-def]
    fault: str,
) -> None:
    """The completion took effect but its answer was lost (a worker killed there is the
    same): after the settle time the thread is searched, the file found, none shared again.
    A failed upload of the bytes is found missing and shared then."""
    bot = make_bot()
    bot.expect_crashes()
    bot.fake.fail(fault, 500, after_effect=fault != "upload")
    request_id = submitted(bot)
    assert len(bot.fake.shared_files()) == (0 if fault == "upload" else 1)
    bot.clock.advance(timedelta(seconds=31))
    bot.wait()
    assert bot.fake.of("conversations.replies")
    (shared,) = bot.fake.shared_files()
    card = bot.record(request_id).approval_message
    assert card is not None and shared.thread_ts == card.ts
    assert bot.services.store.delivery(chart_key(request_id)).state == "sent"  # type: ignore[union-attr]
    bot.clock.advance(timedelta(minutes=10))
    bot.wait()
    assert len(bot.fake.shared_files()) == 1


@pytest.mark.parametrize(
    ("method", "error"),
    [
        ("files.getUploadURLExternal", "missing_scope"),
        ("files.completeUploadExternal", "not_in_channel"),
    ],
)
def test_a_refused_chart_is_logged_and_audited_and_the_approval_goes_on(
    make_bot,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
    method: str,
    error: str,
) -> None:
    bot = make_bot()
    bot.fake.refuse(method, error, times=5)
    with caplog.at_level(logging.ERROR, logger="bot"):
        request_id = submitted(bot)
    assert bot.fake.shared_files() == []
    assert bot.record(request_id).approval_message is not None  # the card is there
    audit = bot.services.store.audit(request_id)
    (refused,) = [e for e in audit if e.action == "chart-refused"]
    assert refused.detail == f"{APPROVAL_CHANNEL}: {error}"
    assert any("cost chart" in r.getMessage() and error in r.getMessage() for r in caplog.records)
    # Not tried again, and not left in the dead letters.
    attempts = len(bot.fake.of(method, ok_only=False))
    bot.clock.advance(timedelta(hours=1))
    bot.wait()
    assert len(bot.fake.of(method, ok_only=False)) == attempts == 1
    assert not [j for j in bot.services.store.dead_jobs() if j.startswith("chart:")]
    bot.approve(request_id, APPROVER)
    bot.wait()
    assert bot.record(request_id).state is not State.PENDING_APPROVAL


def test_serving_a_request_does_not_import_matplotlib(redis_url: str, namespace: str) -> None:
    """The listeners never draw: in a fresh interpreter, the app answers /gpu reserve (its
    quote job run) and the Submit of the approval form (its card job left queued), and
    matplotlib is not imported; nor after the jobs drew and shared the chart (a child
    process draws it)."""
    script = textwrap.dedent(
        f"""
        import sys
        from datetime import UTC, datetime

        from bot.adapters.charts.png import render_png_apart
        from bot.adapters.clock import ManualClock
        from bot.adapters.store import RedisStore
        from bot.adapters.store.connect import open_redis
        from tests.integration.test_slack_flow import quoted, submit_form
        from tests.slack_fake import FakeSlack
        from tests.slack_harness import BotUnderTest

        fake = FakeSlack()
        store = RedisStore(open_redis({redis_url!r}), namespace={namespace!r})
        clock = ManualClock(datetime(2026, 11, 30, 4, tzinfo=UTC))
        bot = BotUnderTest(fake, store, clock, charts=render_png_apart)
        request_id = quoted(bot, "2x p5.48xlarge 3d from 2026-12-14")
        assert submit_form(bot, request_id).status == 200
        assert bot.services.after_ack.wait_idle(10)
        print("after the acks:", "matplotlib" in sys.modules)
        bot.wait()
        print("after the jobs:", "matplotlib" in sys.modules, len(fake.shared_files()))
        bot.close()
        fake.close()
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == [
        "after the acks: False",
        "after the jobs: False 1",
    ]


def test_without_matplotlib_the_card_goes_out_without_its_chart(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import bot.app
    from bot.app import build_services
    from bot.config import load_settings

    monkeypatch.setattr(bot.app, "charts_installed", lambda: False)
    with caplog.at_level("WARNING", logger="bot.app"):
        services = build_services(load_settings(REDIS_URL="memory://"))
    try:
        assert services.notifications.charts is None
        assert any("gpu-bot[charts]" in r.getMessage() for r in caplog.records)
    finally:
        services.close()
