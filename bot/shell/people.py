"""Who the shell can act as: you (a requester) and two approvers, alice and bob, plus any
user id typed at `as`."""

from __future__ import annotations

import re
from dataclasses import dataclass

_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")


@dataclass(frozen=True)
class Person:
    id: str
    name: str

    @property
    def label(self) -> str:
        """ "alice (U0ALICE)", or the bare id of someone known only by it."""
        return self.id if self.name == self.id else f"{self.name} ({self.id})"


YOU = Person("U0YOU", "you")
ALICE = Person("U0ALICE", "alice")
BOB = Person("U0BOB", "bob")
DEFAULT_APPROVERS = (ALICE, BOB)


class People:
    def __init__(self, known: tuple[Person, ...] = (YOU, ALICE, BOB)) -> None:
        self._by_id = {p.id: p for p in known}

    def find(self, name_or_id: str) -> Person | None:
        """A known person by name or id; any other well-formed user id becomes one."""
        wanted = name_or_id.strip().lstrip("@")
        for person in self._by_id.values():
            if wanted.lower() == person.name or wanted.upper() == person.id:
                return person
        if _USER_ID.fullmatch(wanted):
            self._by_id[wanted] = Person(wanted, wanted)
            return self._by_id[wanted]
        return None

    def knows(self, name_or_id: str) -> bool:
        """Whether `as name_or_id` would act as someone (without adding anyone)."""
        wanted = name_or_id.strip().lstrip("@")
        people = self._by_id.values()
        known = any(wanted.lower() == p.name or wanted.upper() == p.id for p in people)
        return known or bool(_USER_ID.fullmatch(wanted))

    def names(self) -> dict[str, str]:
        return {p.id: p.name for p in self._by_id.values()}

    def get(self, user_id: str) -> Person:
        return self._by_id.get(user_id) or Person(user_id, user_id)

    def name(self, user_id: str) -> str:
        return self.get(user_id).name

    def listed(self) -> str:
        return ", ".join(p.label for p in self._by_id.values())
