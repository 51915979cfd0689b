from datetime import timedelta

from bot.blocks.quote import option_line
from bot.domain.future_reservation import AT_WINDOW_SHORT, family_letter, future_dated_refusal
from bot.domain.request import Environment
from tests.factories import NOW
from tests.unit.test_quote_words import market, quote, req

DAY = timedelta(days=1)


def test_no_p_or_trn_type_is_reserved_ahead() -> None:
    assert family_letter("p5.48xlarge") == "p" and family_letter("trn2.48xlarge") == "trn"
    for kind in (
        "p5.48xlarge",
        "p4d.24xlarge",
        "p6-b200.48xlarge",
        "trn2.48xlarge",
        "inf2.48xlarge",
    ):
        why = future_dated_refusal(kind, 192, 2, NOW + 30 * DAY, NOW)
        assert why is not None and "C, M, R, I, T and G" in why


def test_a_g_type_far_enough_ahead_with_32_vcpus_may_be_reserved_ahead() -> None:
    assert future_dated_refusal("g6e.12xlarge", 48, 1, NOW + 30 * DAY, NOW) is None
    assert future_dated_refusal("g5.xlarge", 4, 8, NOW + 5 * DAY, NOW) is None  # 32 vCPUs
    assert "at least 32" in (future_dated_refusal("g5.xlarge", 4, 7, NOW + 30 * DAY, NOW) or "")


def test_between_5_and_120_days_ahead_only() -> None:
    early = future_dated_refusal("g6e.12xlarge", 48, 1, NOW + 4 * DAY, NOW)
    late = future_dated_refusal("g6e.12xlarge", 48, 1, NOW + 121 * DAY, NOW)
    assert early is not None and "5 to 120 days" in early
    assert late is not None and "5 to 120 days" in late
    assert future_dated_refusal("g6e.12xlarge", 48, 1, NOW + 120 * DAY, NOW) is None


def test_the_quote_says_an_odcr_is_reserved_only_when_the_window_opens() -> None:
    r = req(count=65, environment=Environment.EC2)
    q = quote(r, market(r, capacity_blocks=()))
    from bot.domain.comparison import OptionKind

    line = option_line(q.option(OptionKind.ON_DEMAND_RESERVATION), recommended=True)
    assert AT_WINDOW_SHORT in line and "guaranteed window" not in line


def test_the_quote_says_a_g_type_odcr_is_asked_ahead_and_may_be_declined() -> None:
    from bot.domain.comparison import OptionKind

    r = req(count=1, instance_type="g6e.12xlarge", environment=Environment.EC2)
    q = quote(r, market(r, capacity_blocks=(), training_plans=()))
    odcr = q.option(OptionKind.ON_DEMAND_RESERVATION)
    assert odcr.reserved_ahead and not odcr.guaranteed
    assert "future-dated" in odcr.reasons[0] and "may decline it" in odcr.reasons[0]
    assert "held from the start once AWS accepts it" in option_line(odcr, recommended=False)
    p5 = req(count=65, environment=Environment.EC2)
    assert (
        not quote(p5, market(p5, capacity_blocks=()))
        .option(OptionKind.ON_DEMAND_RESERVATION)
        .reserved_ahead
    )
