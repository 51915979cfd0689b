"""Slack payloads read once into an Interaction: who, which request, from where."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from handlers.context import Interaction, Surface, parse
from tests import slack_payloads as payloads


def body_of(encoded: tuple[str, str]) -> dict[str, Any]:
    text, content_type = encoded
    if content_type == "application/json":
        return dict(json.loads(text))
    form = {k: v[0] for k, v in parse_qs(text).items()}
    return dict(json.loads(form["payload"])) if "payload" in form else form


def test_a_command() -> None:
    incoming = parse(body_of(payloads.slash_command("status R3", "U1", "https://r/1", "T-9", "C9")))
    assert incoming == Interaction(
        user="U1",
        surface=Surface.COMMAND,
        response_url="https://r/1",
        trigger_id="T-9",
        channel="C9",
    )
    assert not incoming.from_home


def test_a_button_in_a_message() -> None:
    incoming = parse(body_of(payloads.button_click("gpu_approve", "R7", "U2", "https://r/2")))
    assert incoming is not None
    assert (incoming.user, incoming.subject, incoming.surface) == ("U2", "R7", Surface.MESSAGE)
    assert incoming.response_url == "https://r/2"
    assert incoming.channel == "C0APPROVALS"
    assert not incoming.from_home


def test_a_button_in_app_home_has_no_response_url() -> None:
    body = body_of(payloads.button_click("gpu_approve", "R7", "U2", None, container="home"))
    incoming = parse(body)
    assert incoming is not None
    assert incoming.surface is Surface.HOME and incoming.from_home
    assert incoming.response_url is None


def test_a_modal_carries_where_it_was_opened() -> None:
    opener = parse(body_of(payloads.button_click("gpu_submit_open", "R7", "U2", "https://r/3")))
    assert opener is not None
    metadata = json.dumps(opener.modal_metadata("R7"))
    values = {"choice": payloads.select("spot:0"), "reason": payloads.text_input("eval")}
    incoming = parse(body_of(payloads.view_submission("gpu_submit", values, "U2", metadata)))
    assert incoming is not None
    assert incoming.surface is Surface.MODAL and incoming.opened_from is Surface.MESSAGE
    assert (incoming.subject, incoming.response_url) == ("R7", "https://r/3")
    assert incoming.value("choice") == "spot:0" and incoming.value("reason") == "eval"
    assert not incoming.from_home


def test_a_modal_opened_in_app_home_answers_by_dm() -> None:
    opener = parse(
        body_of(payloads.button_click("gpu_reject_open", "R7", "U2", None, container="home"))
    )
    assert opener is not None
    metadata = json.dumps(opener.modal_metadata("R7", keep_response_url=False))
    incoming = parse(body_of(payloads.view_submission("gpu_reject", {}, "U2", metadata)))
    assert incoming is not None
    assert incoming.from_home and incoming.response_url is None


def test_a_reject_form_opened_before_an_upgrade_still_refreshes_app_home() -> None:
    metadata = json.dumps({"request": "R7", "from_home": "true"})
    incoming = parse(body_of(payloads.view_submission("gpu_reject", {}, "U2", metadata)))
    assert incoming is not None and incoming.from_home and incoming.subject == "R7"


def test_unreadable_metadata_reads_as_none() -> None:
    incoming = parse(body_of(payloads.view_submission("gpu_submit", {}, "U2", "{not json")))
    assert incoming is not None
    assert (incoming.subject, incoming.response_url, incoming.opened_from) == (None, None, None)


def test_an_event_names_its_user() -> None:
    incoming = parse(body_of(payloads.event({"type": "app_home_opened", "user": "U5"})))
    assert incoming == Interaction(user="U5", surface=Surface.EVENT)
    assert parse(body_of(payloads.event({"type": "tokens_revoked"}))) is None
