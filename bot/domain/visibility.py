"""Who sees a request in full: its requester and the approvers (who may have to decide
it) see everything /gpu status shows; anyone else sees that it exists and its state,
unless the workspace chose to show every request to everyone."""

from __future__ import annotations


def sees_in_full(requester: str, user: str, is_approver: bool, everyone: bool = False) -> bool:
    """Whether `user` sees a request of `requester` in full (`everyone`: all do)."""
    return everyone or user == requester or is_approver
