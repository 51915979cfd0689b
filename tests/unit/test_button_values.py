"""Button values: each kind written and read back by the one parser; anything else is
refused with what was expected, and the forms already on messages in Slack still read."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.blocks.values import (
    MOST_HOURS,
    DeploymentRef,
    ExtendAsk,
    ExtensionRef,
    MalformedValue,
    RequestRef,
    decode,
)

request_ids = st.integers(1, 10**12 - 1).map(lambda n: f"R{n}")


@given(request_ids, st.integers(1, MOST_HOURS), st.integers(1, 9999), st.integers(1, 10**6))
def test_every_value_reads_back_as_it_was_written(rid: str, hours: int, n: int, d: int) -> None:
    for value in (RequestRef(rid), ExtendAsk(rid, hours), ExtensionRef(rid, n)):
        assert decode(type(value), str(value)) == value
    assert decode(DeploymentRef, f"D{d}") == DeploymentRef(f"D{d}")


def test_the_forms_already_posted_read_as_before() -> None:
    assert decode(ExtendAsk, "R12|48") == ExtendAsk("R12", 48)
    assert decode(ExtensionRef, "R12|2") == ExtensionRef("R12", 2)
    assert decode(RequestRef, "R7") == RequestRef("R7")
    assert decode(DeploymentRef, "D3") == DeploymentRef("D3")


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        (RequestRef, "", "a request id such as R12"),
        (RequestRef, "R7|24", "a request id such as R12"),
        (RequestRef, "<!channel>", "a request id such as R12"),
        (RequestRef, "r7", "a request id such as R12"),
        (DeploymentRef, "R7", "a deployment id such as D3"),
        (ExtendAsk, "R1", "a request id and hours, such as R12|48"),
        (ExtendAsk, "R1|", "a request id and hours, such as R12|48"),
        (ExtendAsk, "R1|abc", "a request id and hours, such as R12|48"),
        (ExtendAsk, "R1|0", "a request id and hours, such as R12|48"),
        (ExtendAsk, "R1|-24", "a request id and hours, such as R12|48"),
        (ExtendAsk, f"R1|{MOST_HOURS + 1}", "a request id and hours, such as R12|48"),
        (ExtendAsk, "R1|99999999999999999999", "a request id and hours, such as R12|48"),
        (ExtendAsk, "X1|24", "a request id and hours, such as R12|48"),
        (ExtensionRef, "R1|2|3", "a request id and an extension number, such as R12|2"),
        (ExtensionRef, "R1|²", "a request id and an extension number, such as R12|2"),
    ],
)
def test_a_value_of_the_wrong_shape_is_refused_saying_what_belongs(
    kind: type, text: str, expected: str
) -> None:
    with pytest.raises(MalformedValue) as raised:
        decode(kind, text)
    assert str(raised.value).endswith(f"where {expected} belongs.")


def test_a_long_value_is_shown_cut_in_the_refusal() -> None:
    with pytest.raises(MalformedValue) as raised:
        decode(RequestRef, "R" + "9" * 500)
    assert len(str(raised.value)) < 150
