"""Teams and their monthly budgets, as configured (GPU_BOT_TEAMS, GPU_BOT_BUDGETS), and
which team a request belongs to. Pure: the members of a user group are asked by a service.

`GPU_BOT_TEAMS` reads `team=ID,ID;team=ID`: each ID a Slack user group (S…) whose members
are the team, or a channel (C…/G…) whose requests are the team's. Without it, each
requester is a team of their own (the team is their user id).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

TEAM_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
_GROUP = re.compile(r"S[A-Z0-9]{2,}")
_CHANNEL = re.compile(r"[CG][A-Z0-9]{2,}")
_USER = re.compile(r"[UW][A-Z0-9]{2,}")
TEAMS_ACCEPTED = (
    "team=ID,ID;team=ID, e.g. ml-research=S0123ABC,C0456DEF;infra=S0789GHI (team names "
    "a-z, 0-9, - and _; each ID a user group S… or a channel C…/G…, in one team only)"
)
BUDGETS_ACCEPTED = (
    "team=USD,team=USD, e.g. ml-research=50000,infra=20000 (a team of GPU_BOT_TEAMS, or a "
    "Slack user id U… when GPU_BOT_TEAMS is not set; amounts above zero)"
)


@dataclass(frozen=True)
class Team:
    name: str
    groups: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()


def parse_teams(text: str) -> tuple[Team, ...]:
    """`GPU_BOT_TEAMS` as teams, in the order given; ValueError naming the first mistake."""
    teams: list[Team] = []
    seen: dict[str, str] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        name, sep, ids = part.partition("=")
        name = name.strip().lower()
        if not sep or not TEAM_NAME.fullmatch(name):
            raise ValueError(f"{part!r} is not team=ID,ID")
        if any(t.name == name for t in teams):
            raise ValueError(f"team {name!r} is given twice")
        given = [i.strip() for i in ids.split(",") if i.strip()]
        if not given:
            raise ValueError(f"team {name!r} names no user group or channel")
        for one in given:
            if not (_GROUP.fullmatch(one) or _CHANNEL.fullmatch(one)):
                raise ValueError(f"{one!r} (team {name}) is not a user group S… or channel C…")
            if one in seen:
                raise ValueError(f"{one} is in two teams: {seen[one]} and {name}")
            seen[one] = name
        groups = tuple(i for i in given if _GROUP.fullmatch(i))
        channels = tuple(i for i in given if _CHANNEL.fullmatch(i))
        teams.append(Team(name, groups, channels))
    return tuple(teams)


def parse_budgets(text: str) -> dict[str, float]:
    """`GPU_BOT_BUDGETS` as {team: USD a month}; ValueError naming the first mistake."""
    budgets: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, amount = part.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"{part!r} is not team=USD")
        key = name if _USER.fullmatch(name) else name.lower()
        if not (TEAM_NAME.fullmatch(key) or _USER.fullmatch(key)):
            raise ValueError(f"{name!r} is not a team name")
        if key in budgets:
            raise ValueError(f"team {key!r} has two budgets")
        try:
            usd = float(amount.strip().replace("_", "").lstrip("$"))
        except ValueError:
            raise ValueError(f"{amount.strip()!r} (team {key}) is not an amount") from None
        if not math.isfinite(usd) or usd <= 0:
            raise ValueError(f"the budget of {key} must be an amount above zero: {amount!r}")
        budgets[key] = usd
    return budgets


def budgets_refusal(budgets: Mapping[str, float], teams: Iterable[Team]) -> str | None:
    """Why these budgets do not fit these teams (a budget for a team nobody is in), or None."""
    names = {t.name for t in teams}
    for name in budgets:
        if names and name not in names:
            known = ", ".join(sorted(names))
            return f"GPU_BOT_BUDGETS names {name!r}, which is not a team of GPU_BOT_TEAMS ({known})"
        if not names and not _USER.fullmatch(name):
            return (
                f"GPU_BOT_BUDGETS names {name!r}, but without GPU_BOT_TEAMS each requester is "
                "their own team: give user ids (U…), or set GPU_BOT_TEAMS"
            )
    return None


def team_of(
    user: str,
    channel: str | None,
    teams: Iterable[Team],
    members: Callable[[str], frozenset[str]],
) -> str:
    """The team of a request by `user` made in `channel`: the first team (in the order
    configured) with a user group the user is in, else the team of the channel, else the
    user on their own. `members` gives a user group's members."""
    listed = tuple(teams)
    for team in listed:
        if any(user in members(group) for group in team.groups):
            return team.name
    for team in listed:
        if channel and channel in team.channels:
            return team.name
    return user
