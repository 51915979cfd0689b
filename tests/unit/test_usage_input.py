"""Bad input around measured use: the shell's launch/stop, GPU_BOT_IDLE_ALERT; and the
idle alert and report card blocks as Slack gets them."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from bot.adapters.slack.block_rules import message_problems
from bot.blocks.usage import idle_alert, idle_escalation, report_card, utilisation_line
from bot.config import ConfigError, load_settings
from bot.domain.comparison import OptionKind
from bot.domain.sampling import IdleStep, ReportCard
from bot.domain.utilisation import Usage
from bot.shell.instances import LAUNCH_USAGE, STOP_USAGE, ShellInstances


def shell(records: dict[str, Any] | None = None) -> ShellInstances:
    store = SimpleNamespace(get=lambda rid: (records or {}).get(rid))
    return ShellInstances(SimpleNamespace(store=store))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    ["", "four into R1", "4 in R1", "0 into R1", "4 into", "4 into request 1", "1000 into R1"],
)
def test_launch_says_what_it_takes(text: str) -> None:
    assert shell().launch(text) == (LAUNCH_USAGE, False)


@pytest.mark.parametrize("text", ["", "2 into R1", "-1 in R1", "two in R1"])
def test_stop_says_what_it_takes(text: str) -> None:
    assert shell().stop(text) == (STOP_USAGE, False)


def test_an_unknown_request_is_named() -> None:
    assert shell().launch("4 into r7") == ("There is no request R7.", False)
    assert shell().stop("1 in R7") == ("There is no request R7.", False)


@pytest.mark.parametrize("value", ["soon", "0h", "-2h", "2 hours"])
def test_a_bad_idle_alert_is_one_clear_start_up_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("GPU_BOT_IDLE_ALERT", value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    lines = [line for line in str(info.value).splitlines() if "GPU_BOT_IDLE_ALERT" in line]
    assert len(lines) == 1


def test_the_idle_alert_default_is_two_hours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPU_BOT_IDLE_ALERT", raising=False)
    assert load_settings().idle_alert == timedelta(hours=2)
    monkeypatch.setenv("GPU_BOT_IDLE_ALERT", "90m")
    assert load_settings().idle_alert == timedelta(minutes=90)


def test_only_an_odcr_offers_release_and_slack_accepts_the_blocks() -> None:
    hours = timedelta(hours=3)
    odcr = idle_alert(
        "R1", OptionKind.ON_DEMAND_RESERVATION, IdleStep.TELL, hours, 330.0, 900.0, True
    )
    block = idle_alert("R2", OptionKind.CAPACITY_BLOCK, IdleStep.AGAIN, hours, 120.0, 600.0, False)
    up = idle_escalation("R1", "U0REQUESTER", OptionKind.ON_DEMAND_RESERVATION, hours, 330.0, True)
    for message in (odcr, block, up):
        assert message_problems(message.text, message.blocks) == []
    assert "Release it" in str(odcr.blocks) and "Release it" not in str(block.blocks)
    assert "$330.00" in str(odcr.blocks) and "$900.00" in str(odcr.blocks)
    assert "Told again after 12 h idle." in str(block.blocks)
    assert "<@U0REQUESTER>" in str(up.blocks)


@pytest.mark.parametrize(
    ("paid", "on_demand", "verdict"),
    [
        (1000.0, 3140.0, "The block saved $2,140.00."),
        (1000.0, 390.0, "On-Demand would have been $610.00 cheaper."),
        (1000.0, None, "No On-Demand price is known to compare with."),
    ],
)
def test_the_report_card_says_its_verdict(
    paid: float, on_demand: float | None, verdict: str
) -> None:
    card = ReportCard(
        "R1", OptionKind.CAPACITY_BLOCK, "p5.48xlarge", 2, paid, 12.0, 48.0, on_demand
    )
    message = report_card(card)
    assert message_problems(message.text, message.blocks) == []
    shown = str(message.blocks)
    assert verdict in shown and "12.0 of 48.0 instance-hours (25% utilisation)" in shown


def test_the_utilisation_line() -> None:
    assert utilisation_line(None) == "Utilisation: not measured yet"
    usage = Usage(used_instance_hours=3.0, billed_instance_hours=12.0, running=1)
    assert utilisation_line(usage).startswith("Utilisation so far: 25% (3.0 of 12.0")
