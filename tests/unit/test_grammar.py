from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.catalog import default_catalog
from bot.domain.grammar import RequestSyntaxError, parse_request, render_request
from bot.domain.request import (
    Environment,
    IncompleteRequest,
    RequestDraft,
    Workload,
    clean_text,
)

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)


def parse(text: str) -> RequestDraft:
    return parse_request(text, now=NOW)


def test_the_headline_example() -> None:
    d = parse("2x p5.48xlarge 3d from 2026-12-14")
    assert d.count == 2
    assert d.instance_type == "p5.48xlarge"
    assert d.duration_hours == 72
    assert d.start == datetime(2026, 12, 14, tzinfo=UTC)
    assert d.missing() == []


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("2x", "count", 2),
        ("x2", "count", 2),
        ("count=2", "count", 2),
        ("COUNT=12", "count", 12),
        ("36h", "duration_hours", 36),
        ("3d", "duration_hours", 72),
        ("2w", "duration_hours", 336),
        ("duration=3d", "duration_hours", 72),
        ("for 5days", "duration_hours", 120),
        ("us-west-2", "region", "us-west-2"),
        ("region=eu-west-1", "region", "eu-west-1"),
        ("ec2", "environment", Environment.EC2),
        ("env=sagemaker", "environment", Environment.SAGEMAKER),
        ("inference", "workload", Workload.INFERENCE),
        ("workload=event", "workload", Workload.EVENT),
        ("interruptible", "interruptible", True),
        ("util=80%", "utilization_pct", 80),
        ("util=80", "utilization_pct", 80),
        ("util=0.5", "utilization_pct", 50),
        ('reason="launch load test"', "reason", "launch load test"),
        ("reason=short", "reason", "short"),
        ("reason=\u201ccurly quoted text\u201d", "reason", "curly quoted text"),
        ('reason="say \\"hi\\" \\\\ bye"', "reason", 'say "hi" \\ bye'),
    ],
)
def test_each_token_form(text: str, field: str, value: object) -> None:
    assert getattr(parse(text), field) == value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from 2026-12-14", datetime(2026, 12, 14, tzinfo=UTC)),
        ("from 2026-12-14T09:00Z", datetime(2026, 12, 14, 9, 0, tzinfo=UTC)),
        ("from 2026-12-14T09:00", datetime(2026, 12, 14, 9, 0, tzinfo=UTC)),
        ("from 2026-12-14T18:00+09:00", datetime(2026, 12, 14, 9, 0, tzinfo=UTC)),
        ("start=2026-12-14T09:30:15Z", datetime(2026, 12, 14, 9, 30, 15, tzinfo=UTC)),
        ("from tomorrow", datetime(2026, 12, 1, tzinfo=UTC)),
        ("from today", datetime(2026, 11, 30, 4, 0, tzinfo=UTC)),  # now: midnight is past
        ("from now", datetime(2026, 11, 30, 4, 0, tzinfo=UTC)),
        ("from 2026-11-30", datetime(2026, 11, 30, 4, 0, tzinfo=UTC)),
        ("from 2026-11-30T01:00Z", datetime(2026, 11, 30, 4, 0, tzinfo=UTC)),
    ],
)
def test_start_forms(text: str, expected: datetime) -> None:
    assert parse(text).start == expected


def test_sagemaker_name_sets_the_environment() -> None:
    d = parse("ml.p5.48xlarge")
    assert d.instance_type == "p5.48xlarge"
    assert d.environment is Environment.SAGEMAKER


def test_missing_pieces_are_reported_not_raised() -> None:
    d = parse("p5.48xlarge inference")
    assert d.missing() == ["count", "duration", "start"]
    with pytest.raises(IncompleteRequest) as info:
        d.complete("us-east-1")
    assert info.value.missing == ["count", "duration", "start"]


def test_empty_text_is_an_empty_draft() -> None:
    assert parse("   ") == RequestDraft()


def test_complete_fills_defaults() -> None:
    r = parse("2x p5.48xlarge 3d from 2026-12-14").complete("us-east-1")
    assert r.region == "us-east-1"
    assert r.workload is Workload.TRAINING
    assert r.utilization_pct == 100
    assert r.end == datetime(2026, 12, 17, tzinfo=UTC)
    assert r.instance_hours == 144


@pytest.mark.parametrize(
    ("text", "quoted", "accepted_fragment"),
    [
        ("frobnicate", '"frobnicate"', "count=2"),
        ("2x p5.48xlarg", '"p5.48xlarg"', "p5.48xlarge"),
        ("0x", '"0x"', "1 to 1024"),
        ("1025x", '"1025x"', "1 to 1024"),
        ("0h", '"0h"', "1 hour to 365 days"),
        ("366d", '"366d"', "1 hour to 365 days"),
        ("2", '"2"', "2x for a count"),
        ("3d 2d", '"2d"', "duration=3d"),
        ("util=0%", '"util=0%"', "1% to 100%"),
        ("util=120%", '"util=120%"', "1% to 100%"),
        ("util=lots", '"util=lots"', "util=80%"),
        ("from 2026-13-01", '"from 2026-13-01"', "from 2026-12-14"),
        ("from 2020-01-01", '"from 2020-01-01"', "today or later"),
        ("from 2030-01-01", '"from 2030-01-01"', "within two years"),
        ("from yesterday-ish", '"from yesterday-ish"', "from tomorrow"),
        ("colour=blue", '"colour"', "count="),
        ("env=kubernetes", '"env=kubernetes"', "ec2 or sagemaker"),
        ("ec2 ml.p5.48xlarge", '"ml.p5.48xlarge"', "SageMaker"),
        ("region=mars_1", '"region=mars_1"', "region=any"),
    ],
)
def test_errors_quote_the_token_and_list_what_is_accepted(
    text: str, quoted: str, accepted_fragment: str
) -> None:
    with pytest.raises(RequestSyntaxError) as info:
        parse(text)
    message = str(info.value)
    assert quoted in message
    assert "Accepted:" in message
    assert accepted_fragment in message


def test_unclosed_quote() -> None:
    with pytest.raises(RequestSyntaxError, match="quote is not closed"):
        parse('reason="never closed')


def test_from_at_the_end_needs_a_value() -> None:
    with pytest.raises(RequestSyntaxError, match='"from" needs a value'):
        parse("2x p5.48xlarge from")


def test_unknown_type_suggests_closest_names() -> None:
    with pytest.raises(RequestSyntaxError) as info:
        parse("p5.48xl")
    assert "p5.48xlarge" in str(info.value)


def test_render_is_canonical() -> None:
    text = 'ml.p5.48xlarge x2 duration=36h from tomorrow inference util=80% reason="go"'
    assert render_request(parse(text)) == (
        '2x p5.48xlarge 36h from 2026-12-01 sagemaker inference util=80% reason="go"'
    )


# --- property tests -------------------------------------------------------------------

_types = st.sampled_from(default_catalog().instance_types)
_starts = st.one_of(
    st.dates(NOW.date() + timedelta(days=1), NOW.date() + timedelta(days=700)).map(
        lambda d: datetime(d.year, d.month, d.day, tzinfo=UTC)
    ),
    st.datetimes(
        min_value=datetime(2026, 11, 30, 4, 0),
        max_value=datetime(2028, 10, 1),
    ).map(lambda d: d.replace(microsecond=0, tzinfo=UTC)),
)
# Reasons are kept as one clean line (control characters and newlines become spaces).
_reasons = st.text(min_size=1, max_size=200).map(clean_text).filter(bool)

drafts = st.builds(
    RequestDraft,
    count=st.none() | st.integers(1, 1024),
    instance_type=st.none() | _types,
    duration_hours=st.none() | st.integers(1, 365 * 24),
    start=st.none() | _starts,
    region=st.none() | st.sampled_from(["us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1"]),
    environment=st.none() | st.sampled_from(Environment),
    workload=st.none() | st.sampled_from(Workload),
    interruptible=st.booleans(),
    utilization_pct=st.none() | st.integers(1, 100),
    reason=st.none() | _reasons,
)


@settings(max_examples=400, deadline=None)
@given(drafts)
def test_render_then_parse_is_identity(draft: RequestDraft) -> None:
    assert parse(render_request(draft)) == draft


@settings(max_examples=300, deadline=None)
@given(drafts, st.randoms(use_true_random=False))
def test_token_order_does_not_matter(draft: RequestDraft, rnd: object) -> None:
    # Units to shuffle: each single word, "from X" and the quoted reason kept whole.
    units = render_request(draft.model_copy(update={"start": None, "reason": None})).split()
    for piece in ({"start": draft.start}, {"reason": draft.reason}):
        if next(iter(piece.values())):
            units.append(render_request(RequestDraft.model_validate(piece)))
    rnd.shuffle(units)  # type: ignore[attr-defined]
    assert parse(" ".join(units)) == draft


_alphabet = st.sampled_from(
    list(
        '2x p5.48xlarge ml. 3d 36h from tomorrow 2026-12-14T09:00Z util=% reason="\\'
        "\u201c\u201d =,-_+:0123456789abcdefghijklmnopqrstuvwxyz\n\t\x00\u0663"
    )
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.text(), st.lists(_alphabet, max_size=60).map("".join)))
def test_no_input_raises_anything_but_the_grammar_error(text: str) -> None:
    try:
        draft = parse(text)
    except RequestSyntaxError as exc:
        assert str(exc)
    else:
        assert parse(render_request(draft)) == draft


def test_an_account_is_named_with_account_and_survives_rendering() -> None:
    from bot.domain.grammar import parse_request, render_request

    draft = parse_request("2x p5.48xlarge 3d from 2026-12-14 account=Research", now=NOW_FOR_ACCOUNT)
    assert draft.account == "research"
    assert parse_request(render_request(draft), now=NOW_FOR_ACCOUNT) == draft
    with pytest.raises(RequestSyntaxError, match="GPU_BOT_ACCOUNTS"):
        parse_request("2x p5.48xlarge account=a/b", now=NOW_FOR_ACCOUNT)


NOW_FOR_ACCOUNT = datetime(2026, 12, 1, tzinfo=UTC)
