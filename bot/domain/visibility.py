"""Who sees a request in full: its requester and the approvers (who may have to decide
it) see everything /gpu status shows; anyone else sees that it exists and its state,
unless the workspace chose to show every request to everyone."""

from __future__ import annotations

from typing import Protocol


class Viewer(Protocol):
    """Who looks (bot.services.actor.Actor is one)."""

    @property
    def user(self) -> str: ...

    @property
    def is_approver(self) -> bool: ...


def sees_in_full(requester: str, viewer: Viewer, everyone: bool = False) -> bool:
    """Whether `viewer` sees a request of `requester` in full (`everyone`: all do). The
    approver question is asked last: the requester and `everyone` need no answer."""
    return everyone or viewer.user == requester or viewer.is_approver
