"""Modals: the reserve form, submit for approval, and reject with a reason."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bot.blocks.ids import ELEMENT, CallbackId, FormBlock
from bot.blocks.quote import request_title
from bot.blocks.requests import approval_question
from bot.blocks.text import clip, esc, usd, when
from bot.domain.approval import SpendingPolicy
from bot.domain.choices import submittable_candidates
from bot.domain.extension import ExtensionOffer
from bot.domain.grammar import render_duration
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord
from bot.domain.request import REASON_NEEDED, RequestDraft, Workload

View = dict[str, Any]
Block = dict[str, Any]


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": _plain(clip(text, 75)), "value": value}


def _input(
    block: FormBlock, label: str, element: Block, optional: bool = False, hint: str | None = None
) -> Block:
    out: Block = {
        "type": "input",
        "block_id": block.value,
        "label": _plain(label),
        "element": {**element, "action_id": ELEMENT},
        "optional": optional,
    }
    if hint:
        out["hint"] = _plain(hint)
    return out


def _modal(
    callback: CallbackId, title: str, submit: str, blocks: list[Block], metadata: dict[str, str]
) -> View:
    return {
        "type": "modal",
        "callback_id": callback.value,
        "title": _plain(title[:24]),
        "submit": _plain(submit[:24]),
        "close": _plain("Cancel"),
        # A request id and a response_url: far below Slack's 3000 characters (and a cut
        # JSON string would be worse than Slack refusing the view).
        "private_metadata": json.dumps(metadata),
        "blocks": blocks,
    }


def reserve_form(
    draft: RequestDraft,
    instance_types: list[str],
    default_region: str,
    metadata: dict[str, str],
    note: str | None = None,
    accounts: Sequence[str] = (),
) -> View:
    """The request form, pre-filled with whatever was parsed. With more than one of
    `accounts` (the default first) it asks which one the request runs in."""
    type_options = [_option(t, t) for t in instance_types[:100]]
    type_select: Block = {
        "type": "static_select",
        "options": type_options,
        "placeholder": _plain("p5.48xlarge"),
    }
    if draft.instance_type:
        type_select["initial_option"] = _option(draft.instance_type, draft.instance_type)
    count: Block = {
        "type": "number_input",
        "is_decimal_allowed": False,
        "min_value": "1",
        "max_value": "1024",
    }
    if draft.count:
        count["initial_value"] = str(draft.count)
    duration: Block = {"type": "plain_text_input", "placeholder": _plain("3d, 36h or 2w")}
    if draft.duration_hours:
        duration["initial_value"] = render_duration(draft.duration_hours)
    date: Block = {"type": "datepicker"}
    time: Block = {"type": "timepicker"}
    if draft.start:
        date["initial_date"] = draft.start.strftime("%Y-%m-%d")
        time["initial_time"] = draft.start.strftime("%H:%M")
    env_options = [
        _option("EC2 or SageMaker", "any"),
        _option("EC2", "ec2"),
        _option("SageMaker", "sagemaker"),
    ]
    env_value = draft.environment.value if draft.environment else "any"
    workload_options = [_option(w.value.capitalize(), w.value) for w in Workload]
    workload = draft.workload or Workload.TRAINING
    interruptible_option = _option("The work checkpoints and can restart (Spot is fine)", "yes")
    interruptible: Block = {"type": "checkboxes", "options": [interruptible_option]}
    if draft.interruptible:
        interruptible["initial_options"] = [interruptible_option]
    util: Block = {
        "type": "number_input",
        "is_decimal_allowed": False,
        "min_value": "1",
        "max_value": "100",
        "initial_value": str(draft.utilization_pct or 100),
    }
    reason: Block = {"type": "plain_text_input", "multiline": True, "max_length": 500}
    if draft.reason:
        reason["initial_value"] = draft.reason
    blocks: list[Block] = []
    if note:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
    blocks += [
        _input(FormBlock.COUNT, "Instances", count),
        _input(FormBlock.INSTANCE_TYPE, "Instance type", type_select),
        _input(FormBlock.DURATION, "Duration", duration, hint="36h, 3d, 2w (up to 365 days)"),
        _input(FormBlock.START_DATE, "Start date (UTC)", date),
        _input(
            FormBlock.START_TIME,
            "Start time (UTC)",
            time,
            optional=True,
            hint="Leave empty for 00:00 UTC",
        ),
        _input(
            FormBlock.REGION,
            "Region",
            {"type": "plain_text_input", "initial_value": draft.region or default_region},
        ),
        _input(
            FormBlock.ENVIRONMENT,
            "Environment",
            {
                "type": "static_select",
                "options": env_options,
                "initial_option": next(o for o in env_options if o["value"] == env_value),
            },
        ),
        _input(
            FormBlock.WORKLOAD,
            "Workload",
            {
                "type": "static_select",
                "options": workload_options,
                "initial_option": _option(workload.value.capitalize(), workload.value),
            },
        ),
        _input(FormBlock.INTERRUPTIBLE, "Interruptions", interruptible, optional=True),
        _input(
            FormBlock.UTILIZATION,
            "Expected utilisation (%)",
            util,
            hint="How much of the window the instances will really run",
        ),
        _input(
            FormBlock.REASON,
            "Reason for the approvers",
            reason,
            optional=True,  # comparing needs none
            hint=f"{REASON_NEEDED}: give it here or when you submit.",
        ),
    ]
    if len(accounts) > 1:
        account_options = [_option(name, name) for name in accounts[:100]]
        chosen = draft.account if draft.account in accounts else accounts[0]
        account: Block = {
            "type": "static_select",
            "options": account_options,
            "initial_option": next(o for o in account_options if o["value"] == chosen),
        }
        blocks.insert(
            -1,
            _input(
                FormBlock.ACCOUNT,
                "AWS account",
                account,
                hint="Where it is quoted, bought and tracked (GPU_BOT_ACCOUNTS)",
            ),
        )
    return _modal(CallbackId.RESERVE_FORM, "Reserve GPUs", "Compare options", blocks, metadata)


def submit_form(
    record: CapacityRecord,
    quote: Quote,
    metadata: dict[str, str],
    limits: SpendingPolicy | None = None,
) -> View:
    """Pick an option (the recommended one preselected) and give a reason. With `limits`,
    only what they let be submitted is offered (everything, when nothing is: the submit
    then says why)."""
    options = []
    initial = None
    for pick in submittable_candidates(quote, limits):
        label = f"{pick.kind.label} · {usd(pick.total_usd)}"
        if pick.most_usd != pick.total_usd:
            label += f" (up to {usd(pick.most_usd)})"
        if pick.offering:
            zone = f" {pick.offering.zone}" if pick.offering.zone else ""
            label += f" · {pick.offering.start:%m-%d %H:%M}{zone}"
        if pick.recommended:
            label += " ★"
        option = _option(label, pick.value)
        options.append(option)
        if pick.recommended:
            initial = option
    select: Block = {"type": "static_select", "options": options[:100]}
    if initial:
        select["initial_option"] = initial
    reason: Block = {
        "type": "plain_text_input",
        "multiline": True,
        "max_length": 500,
        "placeholder": _plain("What is it for, and why now?"),
    }
    if record.request.reason:
        reason["initial_value"] = record.request.reason
    blocks: list[Block] = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"*{request_title(record.request)}*"},
        },
        _input(FormBlock.CHOICE, "Option", select),
        _input(FormBlock.REASON, "Reason for the approvers", reason),
    ]
    return _modal(CallbackId.SUBMIT, "Submit for approval", "Submit", blocks, metadata)


def approve_form(record: CapacityRecord, metadata: dict[str, str]) -> View:
    """The money confirm of Approve, with the amount; opened only for someone who may."""
    amount = usd(record.most_usd)
    blocks: list[Block] = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip(approval_question(record), 3000)},
        }
    ]
    return _modal(
        CallbackId.APPROVE, "Approve this purchase?", _approve_label(amount), blocks, metadata
    )


def extension_approve_form(
    request_id: str, offer: ExtensionOffer, metadata: dict[str, str]
) -> View:
    """The money confirm of an extension's Approve, with the amount."""
    question = (
        f"Approve *{usd(offer.fee_usd)}* to extend *{esc(request_id)}* by "
        f"{render_duration(offer.hours)}, to {when(offer.end)}? It is paid up front and "
        "cannot be cancelled."
    )
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": question}}]
    label = _approve_label(usd(offer.fee_usd))
    return _modal(CallbackId.EXTENSION_APPROVE, "Approve extension?", label, blocks, metadata)


def _approve_label(amount: str) -> str:
    """The submit button names the amount when it fits Slack's 24 characters."""
    label = f"Approve {amount}"
    return label if len(label) <= 24 else "Approve"


def reject_form(record: CapacityRecord, metadata: dict[str, str]) -> View:
    question = f"Reject request *{record.id}* ({request_title(record.request)})?"
    return _reason_form(CallbackId.REJECT, "Reject request", question, metadata)


def extension_reject_form(request_id: str, offer: ExtensionOffer, metadata: dict[str, str]) -> View:
    question = (
        f"Reject extending *{esc(request_id)}* by {render_duration(offer.hours)} "
        f"to {when(offer.end)} ({usd(offer.fee_usd)})?"
    )
    return _reason_form(CallbackId.EXTENSION_REJECT, "Reject extension", question, metadata)


def _reason_form(callback: CallbackId, title: str, question: str, metadata: dict[str, str]) -> View:
    reason: Block = {"type": "plain_text_input", "multiline": True, "max_length": 500}
    blocks: list[Block] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": question}},
        _input(FormBlock.REJECT_REASON, "Reason (sent to the requester)", reason),
    ]
    return _modal(callback, title, "Reject", blocks, metadata)


def deadline_note(record: CapacityRecord) -> str:
    if record.approval_deadline is None:
        return ""
    return f"Approvers have until {when(record.approval_deadline)}."
