"""The watch's rules, pure: what fits (each field), what is better, the shared question,
the rhythm, and the grammar's refusals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.grammar import RequestSyntaxError
from bot.domain.market import Offering, Origin, PriceSource, ReservationKind
from bot.domain.request import CapacityRequest, Environment
from bot.domain.watch import (
    PriceCap,
    Sent,
    Watch,
    best_fit,
    better,
    default_until,
    questions,
    round_every,
    why_not,
)
from bot.domain.watch_grammar import parse_watch

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
START = datetime(2026, 12, 14, tzinfo=UTC)
SOURCE = PriceSource(origin=Origin.SANDBOX, detail="test", as_of=NOW)


def watch(**changes: object) -> Watch:
    request = CapacityRequest(
        count=8,
        instance_type="p5.48xlarge",
        duration_hours=72,
        start=START,
        region=str(changes.pop("region", "us-east-1")),
        environment=changes.pop("environment", Environment.EC2),  # type: ignore[arg-type]
    )
    fields: dict[str, object] = {
        "id": "W1",
        "watcher": "U1",
        "request": request,
        "flex_hours": 7 * 24,
        "until": START,
        "created_at": NOW,
    }
    return Watch.model_validate(fields | changes)


def offer(
    start: datetime = START + timedelta(days=2, hours=11, minutes=30),
    *,
    kind: ReservationKind = ReservationKind.CAPACITY_BLOCK,
    count: int = 8,
    hours: float = 72,
    hourly: float = 30.0,
    instance_type: str = "p5.48xlarge",
    offering_id: str = "cb-1",
) -> Offering:
    return Offering(
        kind=kind,
        offering_id=offering_id,
        instance_type=instance_type,
        count=count,
        start=start,
        end=start + timedelta(hours=hours),
        duration_hours=hours,
        upfront_usd=hourly * count * hours,
        source=SOURCE,
    )


def test_an_offering_inside_the_window_at_the_price_fits() -> None:
    assert why_not(watch(), offer(), "us-east-1") == ""
    on_the_last_day = offer(START + timedelta(days=7, hours=11, minutes=30))
    assert why_not(watch(), on_the_last_day, "us-east-1") == ""
    no_flex = watch(flex_hours=0)
    assert why_not(no_flex, offer(START + timedelta(hours=11, minutes=30)), "us-east-1") == ""


@pytest.mark.parametrize(
    ("offering", "region", "said"),
    [
        (offer(count=4), "us-east-1", "4 instances, 8 were asked"),
        (offer(hours=48), "us-east-1", "lasts 48h"),
        (offer(START - timedelta(hours=12)), "us-east-1", "before the asked start"),
        (offer(START + timedelta(days=8, hours=11)), "us-east-1", "past the flex window"),
        (offer(), "us-west-2", "outside the regions"),
        (offer(instance_type="p4d.24xlarge"), "us-east-1", "not p5.48xlarge"),
        (offer(kind=ReservationKind.TRAINING_PLAN), "us-east-1", "training-plan"),
    ],
)
def test_each_field_of_the_watch_can_refuse_an_offering(
    offering: Offering, region: str, said: str
) -> None:
    assert said in why_not(watch(), offering, region)


def test_the_price_cap_is_per_instance_hour_or_in_all() -> None:
    hourly = watch(cap=PriceCap(usd=29.99, per_hour=True))
    assert "over max $29.99/instance-hour" in why_not(hourly, offer(hourly=30.0), "us-east-1")
    assert why_not(hourly, offer(hourly=29.99), "us-east-1") == ""
    total = 30.0 * 8 * 72  # 17,280
    in_all = watch(cap=PriceCap(usd=total, per_hour=False))
    assert why_not(in_all, offer(hourly=30.0), "us-east-1") == ""
    assert "over max" in why_not(in_all, offer(hourly=30.01), "us-east-1")


def test_the_environment_picks_the_kind_and_region_any_takes_every_region() -> None:
    sagemaker = watch(environment=Environment.SAGEMAKER)
    assert "capacity-block" in why_not(sagemaker, offer(), "us-east-1")
    plan = offer(kind=ReservationKind.TRAINING_PLAN)
    assert why_not(sagemaker, plan, "us-east-1") == ""
    assert why_not(watch(region="any"), offer(), "ap-northeast-1") == ""
    assert why_not(watch(region="us-east-1,us-west-2"), offer(), "us-west-2") == ""


def test_the_best_fit_is_the_earliest_then_the_cheapest_and_the_best_seen_says_why_not() -> None:
    late, early = offer(START + timedelta(days=5), offering_id="late"), offer(offering_id="early")
    pick, seen = best_fit(watch(), [("us-east-1", late), ("us-east-1", early)])
    assert pick is not None and pick[1].offering_id == "early"
    capped = watch(cap=PriceCap(usd=10, per_hour=True))
    pick, seen = best_fit(capped, [("us-east-1", early)])
    assert pick is None and seen is not None and "over max" in seen.why_not


def test_a_match_is_sent_again_only_when_earlier_or_five_percent_cheaper() -> None:
    first = offer(offering_id="a", hourly=30.0)
    sent = (
        Sent(offering_id="a", region="us-east-1", start=first.start, upfront_usd=first.upfront_usd),
    )
    assert better(first, ())
    assert not better(first, sent)  # the same one: never again
    same_day_slightly_cheaper = offer(offering_id="b", hourly=29.0)  # 3.3% less
    assert not better(same_day_slightly_cheaper, sent)
    assert better(offer(offering_id="c", hourly=28.5), sent)  # exactly 5% less
    assert better(offer(first.start - timedelta(days=1), offering_id="d", hourly=40), sent)


def test_watches_asking_the_same_share_one_question() -> None:
    one, two = (
        watch(id="W1", watcher="U1"),
        watch(id="W2", watcher="U2", cap=PriceCap(usd=1, per_hour=True)),
    )
    (q1,), (q2,) = questions(one, ("us-east-1",)), questions(two, ("us-east-1",))
    assert q1.key == q2.key  # the price cap is judged on the answer, not asked of AWS
    later = watch(flex_hours=24)
    assert questions(later, ("us-east-1",))[0].key != q1.key
    either = watch(environment=None)
    kinds = {q.kind for q in questions(either, ("us-east-1", "us-west-2"))}
    assert kinds == {ReservationKind.CAPACITY_BLOCK, ReservationKind.TRAINING_PLAN}
    assert len(questions(either, ("us-east-1", "us-west-2"))) == 4


def test_what_aws_never_sells_asks_nothing() -> None:
    base = watch()
    big = base.model_copy(update={"request": base.request.model_copy(update={"count": 100})})
    assert questions(big, ("us-east-1",)) == []  # a block has 64 instances at most
    odd = base.model_copy(
        update={"request": base.request.model_copy(update={"duration_hours": 30})}
    )
    (rounded,) = questions(odd, ("us-east-1",))
    assert rounded.duration_hours == 48  # a 30-hour need fits a 2-day block


def test_the_rhythm_quickens_as_the_start_comes() -> None:
    assert round_every(NOW + timedelta(days=1), NOW) == timedelta(minutes=5)
    assert round_every(NOW + timedelta(days=3), NOW) == timedelta(minutes=15)
    assert round_every(NOW + timedelta(days=30), NOW) == timedelta(hours=1)


def test_until_defaults_to_the_latest_start_at_most_eight_weeks() -> None:
    request = watch().request
    # through the end of the day of start + flex: blocks start at 11:30 UTC
    assert default_until(request, 24, NOW) == START + timedelta(
        days=1, hours=23, minutes=59, seconds=59
    )
    far = request.model_copy(update={"start": NOW + timedelta(weeks=20)})
    assert default_until(far, 0, NOW) == NOW + timedelta(weeks=8)


def test_the_grammar_reads_the_watch_settings_beside_the_request() -> None:
    text = "8x p5.48xlarge 3d from 2026-12-14 flex=7d max=40/h region=any until=2026-12-10"
    ask = parse_watch(text, now=NOW)
    assert ask.flex_hours == 168 and ask.cap == PriceCap(usd=40, per_hour=True)
    assert ask.until == datetime(2026, 12, 10, 23, 59, 59, tzinfo=UTC)  # through the 10th
    assert ask.draft.region == "any" and ask.draft.count == 8
    assert parse_watch("8x p5.48xlarge 3d from 2026-12-14 max=30000", now=NOW).cap == PriceCap(
        usd=30000, per_hour=False
    )


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("flex=-1d", "negative"),
        ("flex=9w", "more than 8 weeks"),
        ("max=0", "more than 0"),
        ("max=lots", "not an amount"),
        ("until=2026-11-01", "in the past"),
        ("auto=yes", "not something a watch does"),
        ("auto=submit", "need a reason"),
        ("flex=1d flex=2d", "given twice"),
    ],
)
def test_bad_watch_settings_are_refused_naming_what_is_accepted(extra: str, said: str) -> None:
    with pytest.raises(RequestSyntaxError) as caught:
        parse_watch(f"8x p5.48xlarge 3d from 2026-12-14 {extra}", now=NOW)
    assert said in str(caught.value)
    assert "Accepted:" in str(caught.value)
