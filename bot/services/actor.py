"""Who is acting: a Slack user, and whether they may approve.

The middleware makes one `Actor` for each Slack request and the services decide with it,
so the approver question is answered one way everywhere. It is asked of the approver
directory only the first time a service needs it (most requests never do), so no ack
waits for it."""

from __future__ import annotations

from collections.abc import Callable


class NotAllowed(Exception):
    """The actor may not do this; the message says who may."""


class Actor:
    __slots__ = ("_approver", "_is_approver", "user")

    def __init__(self, user: str, approver: bool | Callable[[str], bool]) -> None:
        """`approver`: whether `user` may approve, or the directory to ask when it
        matters."""
        self.user = user
        self._approver = approver
        self._is_approver: bool | None = approver if isinstance(approver, bool) else None

    @property
    def is_approver(self) -> bool:
        if self._is_approver is None:
            assert not isinstance(self._approver, bool)
            self._is_approver = self._approver(self.user)
        return self._is_approver

    def __repr__(self) -> str:
        known = "not asked" if self._is_approver is None else self._is_approver
        return f"Actor({self.user!r}, approver={known})"
