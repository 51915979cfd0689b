"""`/gpu help` and usage text."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bot.blocks.elements import section
from bot.domain.grammar import ACCEPTED_FORMS, field_word

EXAMPLE_LEAD = timedelta(days=14)  # examples start two weeks out, so they always work


def example_request(now: datetime) -> str:
    """A request people can copy as it is: its start is always in the future."""
    return f"2x p5.48xlarge 3d from {now + EXAMPLE_LEAD:%Y-%m-%d}"


def usage(now: datetime) -> str:
    example = example_request(now)
    return (
        "*Usage*\n"
        f"• `/gpu reserve {example}` compare options and ask for approval "
        "(no arguments opens a form)\n"
        f"• `/gpu quote {example} util=60%` compare only\n"
        "• `/gpu status [ID]` one request, or your latest (`/gpu status R1 history 2`: "
        "earlier history)\n"
        "• `/gpu list [PAGE]` your requests, newest first (approvers also see the requests "
        "and extensions that wait for them, with their buttons; `/gpu list waiting [PAGE]` "
        "for all of it)\n"
        "• `/gpu spend [2026-12] [TEAM]` a month's spend per request and team\n"
        "• `/gpu cancel ID` cancel a request that is not approved yet, or an approved "
        "On-Demand or Spot one before its window opens (nothing is bought for those)\n"
        "• `/gpu deploy [ID]` put SageMaker models on an active training plan's endpoint, "
        "split into MIG partitions (a form)\n"
        "• `/gpu status D3` a deployment: its endpoint, components and the plan's time left\n"
        "• `/gpu cleanup D3` delete a deployment (components, endpoint, configuration); "
        "`/gpu cleanup R12` every deployment of a request\n"
        f"• `/gpu watch {example} flex=7d max=40/h` watch for a Capacity Block or training "
        "plan not offered yet (also `max=30000` in all, `until=DATE`, `auto=submit` with a "
        "reason); a DM brings each match, ready to submit\n"
        "• `/gpu watches` your watches (approvers: everyone's); `/gpu unwatch W3` stops one; "
        "`/gpu status W3` what it saw\n"
        "• `/gpu outlook 16x p5.48xlarge 3d region=any` how often such a block or plan was "
        "seen, how far ahead and at what price (what this account's searches saw)\n"
        "• `/gpu mig check p4d.24xlarge 4g.20gb 2g.10gb 1g.5gb` check a MIG partition layout\n"
        "• `/gpu mig plan p4d.24xlarge llama=18gbx8 embed=4gbx8` the MIG layout that fits "
        "these models best, with chargeback\n"
        "• `/gpu help` this text"
    )


def grammar_help() -> str:
    lines = [f"• {field_word(name)}: `{form}`" for name, form in ACCEPTED_FORMS.items()]
    return "*Request pieces* (any order, times in UTC)\n" + "\n".join(lines)


def help_blocks(now: datetime) -> list[dict[str, Any]]:
    return [
        section(usage(now)),
        section(grammar_help()),
    ]
