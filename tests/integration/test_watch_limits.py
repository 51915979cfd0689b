"""Watches are bounded: per person and in all (refused in the ack with how many, and the
command that stops one, storing nothing), and the rounds' AWS calls are bounded whatever
the number of watches: at most K searches a minute, the rest taking turns, so each
question is asked within ceil(n / K) minutes. Signed `/gpu watch` commands into the real
app on real Redis; the rounds run by the real worker against the sandbox market."""

from __future__ import annotations

import math
import threading
from datetime import timedelta

from bot.domain.watch import Question
from tests.integration.test_watches import hold_everything, watched
from tests.slack_harness import APPROVER, OUTSIDER, REQUESTER, BotUnderTest

MINUTE = timedelta(minutes=1)


def watch_text(day: int) -> str:
    return f"8x p5.48xlarge 3d from 2026-12-{day:02d} us-east-1 ec2"


def refused(bot: BotUnderTest, user: str, day: int) -> str:
    reply, _ = bot.command(f"watch {watch_text(day)}", user)
    assert reply.status == 200 and "Watching W" not in reply.body, reply.body
    return reply.body


def live(bot: BotUnderTest, user: str | None = None) -> list[str]:
    return [w.id for w in bot.services.watches.watches.watches(user, live_only=True)]


def test_a_person_at_their_limit_is_refused_with_how_many_and_how_to_stop_one(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(watches_per_person=2)
    hold_everything(bot)
    assert [watched(bot, watch_text(d)) for d in (14, 15)] == ["W1", "W2"]
    text = refused(bot, REQUESTER, 16)
    assert "Not watching: you have 2 watches watching, the most one person may have (2)" in text
    assert "`/gpu unwatch W1`" in text and "`/gpu watches`" in text
    assert sorted(live(bot)) == ["W1", "W2"]  # nothing stored for the refused one
    assert watched(bot, watch_text(16), OUTSIDER)  # someone else is not held by it
    bot.command("unwatch W1", REQUESTER)
    bot.wait()
    assert watched(bot, watch_text(16)) == "W5"  # one stopped: room again


def test_everyone_at_the_total_is_refused_saying_how_many_run(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(watches_per_person=5, watches_total=3)
    hold_everything(bot)
    watched(bot, watch_text(14))
    watched(bot, watch_text(15))
    watched(bot, watch_text(16), APPROVER)
    text = refused(bot, OUTSIDER, 17)
    assert "the bot is watching 3 watches for everyone, the most it runs at once (3)" in text
    assert "0 of them are yours" in text and "GPU_BOT_WATCHES_TOTAL" in text
    text = refused(bot, REQUESTER, 17)
    assert "2 of them are yours" in text and "`/gpu unwatch W1`" in text
    assert len(live(bot)) == 3


def test_watches_asked_at_the_same_moment_cannot_pass_the_limit_together(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(watches_per_person=3)
    hold_everything(bot)
    bodies: list[str] = []

    def ask(day: int) -> None:
        reply, _ = bot.command(f"watch {watch_text(day)}", REQUESTER)
        bodies.append(reply.body)

    threads = [threading.Thread(target=ask, args=(d,)) for d in range(10, 22)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    bot.wait()
    assert sum("Watching W" in b for b in bodies) == 3
    assert sum("the most one person may have (3)" in b for b in bodies) == 9
    assert len(live(bot, REQUESTER)) == 3


def test_a_round_asks_at_most_k_questions_a_minute_and_every_one_within_ceil_n_over_k(
    make_bot,  # type: ignore[no-untyped-def]
) -> None:
    k, n = 3, 10
    bot = make_bot(watch_searches_per_minute=k, watches_per_person=50)
    hold_everything(bot)
    search = bot.services.watch_search
    asked: list[str] = []
    real = search.search

    def counted(question: Question, account: str | None, now):  # type: ignore[no-untyped-def]
        asked.append(question.key)
        return real(question, account, now)

    search.search = counted  # type: ignore[method-assign]
    # n distinct questions, each asked by two watchers: 2n watches, n AWS questions.
    bot.clock.set(bot.clock.now().replace(second=0, microsecond=0))
    for day in range(10, 10 + n):
        for user in (REQUESTER, OUTSIDER):
            reply, _ = bot.command(f"watch {watch_text(day)}", user)
            assert "Watching W" in reply.body, reply.body
    per_minute = []
    seen: set[str] = set()
    for _ in range(math.ceil(n / k)):
        before = len(asked)
        bot.wait()
        made = asked[before:]
        per_minute.append(len(made))
        assert not seen & set(made), "a question asked twice before every other had its turn"
        seen |= set(made)
        bot.clock.advance(MINUTE)
    assert per_minute == [3, 3, 3, 1]
    assert len(seen) == n  # every question asked within ceil(n / k) minutes
    for _ in range(5):  # and the bound holds after: rounds are hourly this far out
        before = len(asked)
        bot.wait()
        assert len(asked) - before <= k
        bot.clock.advance(MINUTE)
