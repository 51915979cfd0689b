"""Modals: the reserve form, submit for approval, and reject with a reason."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from bot.blocks.elements import context, input_block, modal, plain, section, select_option
from bot.blocks.ids import CallbackId, FormBlock
from bot.blocks.quote import request_title
from bot.blocks.requests import approval_question
from bot.blocks.text import clip, esc, usd, when
from bot.domain.approval import SpendingPolicy
from bot.domain.choices import submittable_candidates
from bot.domain.extension import ExtensionOffer
from bot.domain.grammar import render_duration
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord
from bot.domain.reminders import human_duration
from bot.domain.request import REASON_NEEDED, RequestDraft, Workload

View = dict[str, Any]
Block = dict[str, Any]


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
    blocks: list[Block] = [context(note)] if note else []
    blocks += [
        *_size_inputs(draft, instance_types),
        *_start_inputs(draft),
        *_place_inputs(draft, default_region),
        *_work_inputs(draft),
    ]
    if len(accounts) > 1:
        blocks.insert(-1, _account_input(draft, accounts))
    return modal(CallbackId.RESERVE_FORM, "Reserve GPUs", "Compare options", blocks, metadata)


def _size_inputs(draft: RequestDraft, instance_types: list[str]) -> list[Block]:
    """How many of which type, for how long."""
    type_options = [select_option(t, t) for t in instance_types[:100]]
    type_select: Block = {
        "type": "static_select",
        "options": type_options,
        "placeholder": plain("p5.48xlarge"),
    }
    if draft.instance_type:
        type_select["initial_option"] = select_option(draft.instance_type, draft.instance_type)
    count: Block = {
        "type": "number_input",
        "is_decimal_allowed": False,
        "min_value": "1",
        "max_value": "1024",
    }
    if draft.count:
        count["initial_value"] = str(draft.count)
    duration: Block = {"type": "plain_text_input", "placeholder": plain("3d, 36h or 2w")}
    if draft.duration_hours:
        duration["initial_value"] = render_duration(draft.duration_hours)
    return [
        input_block(FormBlock.COUNT, "Instances", count),
        input_block(FormBlock.INSTANCE_TYPE, "Instance type", type_select),
        input_block(FormBlock.DURATION, "Duration", duration, hint="36h, 3d, 2w (up to 365 days)"),
    ]


def _start_inputs(draft: RequestDraft) -> list[Block]:
    """The start: a date, and an optional time (UTC)."""
    date: Block = {"type": "datepicker"}
    time: Block = {"type": "timepicker"}
    if draft.start:
        date["initial_date"] = draft.start.strftime("%Y-%m-%d")
        time["initial_time"] = draft.start.strftime("%H:%M")
    return [
        input_block(FormBlock.START_DATE, "Start date (UTC)", date),
        input_block(
            FormBlock.START_TIME,
            "Start time (UTC)",
            time,
            optional=True,
            hint="Leave empty for 00:00 UTC",
        ),
    ]


def _place_inputs(draft: RequestDraft, default_region: str) -> list[Block]:
    """The region, and EC2 or SageMaker."""
    env_options = [
        select_option("EC2 or SageMaker", "any"),
        select_option("EC2", "ec2"),
        select_option("SageMaker", "sagemaker"),
    ]
    env_value = draft.environment.value if draft.environment else "any"
    return [
        input_block(
            FormBlock.REGION,
            "Region",
            {"type": "plain_text_input", "initial_value": draft.region or default_region},
        ),
        input_block(
            FormBlock.ENVIRONMENT,
            "Environment",
            {
                "type": "static_select",
                "options": env_options,
                "initial_option": next(o for o in env_options if o["value"] == env_value),
            },
        ),
    ]


def _work_inputs(draft: RequestDraft) -> list[Block]:
    """What the work is: its kind, whether it can be interrupted, how much of the window
    it uses, and why it is asked for."""
    workload_options = [select_option(w.value.capitalize(), w.value) for w in Workload]
    workload = draft.workload or Workload.TRAINING
    restartable = "The work checkpoints and can restart (Spot is fine)"
    interruptible_option = select_option(restartable, "yes")
    interruptible: Block = {"type": "checkboxes", "options": [interruptible_option]}
    if draft.interruptible:
        interruptible["initial_options"] = [interruptible_option]
    util: Block = {
        "type": "number_input",
        "is_decimal_allowed": False,
        "min_value": "1",
        "max_value": "100",
        "placeholder": plain("measured, else 100"),
    }
    if draft.utilization_pct is not None:
        util["initial_value"] = str(draft.utilization_pct)
    reason: Block = {"type": "plain_text_input", "multiline": True, "max_length": 500}
    if draft.reason:
        reason["initial_value"] = draft.reason
    return [
        input_block(
            FormBlock.WORKLOAD,
            "Workload",
            {
                "type": "static_select",
                "options": workload_options,
                "initial_option": select_option(workload.value.capitalize(), workload.value),
            },
        ),
        input_block(FormBlock.INTERRUPTIBLE, "Interruptions", interruptible, optional=True),
        input_block(
            FormBlock.UTILIZATION,
            "Expected utilisation (%)",
            util,
            optional=True,  # empty: the team's measured utilisation, else 100%
            hint="How much of the window the instances will really run; empty: what your "
            "team's last reservations measured (100% until something is measured)",
        ),
        input_block(
            FormBlock.REASON,
            "Reason for the approvers",
            reason,
            optional=True,  # comparing needs none
            hint=f"{REASON_NEEDED}: give it here or when you submit.",
        ),
    ]


def _account_input(draft: RequestDraft, accounts: Sequence[str]) -> Block:
    """Which of the AWS accounts (the default first) the request runs in."""
    account_options = [select_option(name, name) for name in accounts[:100]]
    chosen = draft.account if draft.account in accounts else accounts[0]
    account: Block = {
        "type": "static_select",
        "options": account_options,
        "initial_option": next(o for o in account_options if o["value"] == chosen),
    }
    return input_block(
        FormBlock.ACCOUNT,
        "AWS account",
        account,
        hint="Where it is quoted, bought and tracked (GPU_BOT_ACCOUNTS)",
    )


def submit_form(
    record: CapacityRecord,
    quote: Quote,
    metadata: dict[str, str],
    limits: SpendingPolicy | None = None,
    already: Sequence[CapacityRecord] = (),
) -> View:
    """Pick an option (the recommended one preselected) and give a reason. With `limits`,
    only what they let be submitted is offered (everything, when nothing is: the submit
    then says why). `already`: the person's requests for the same need, said first."""
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
        option = select_option(label, pick.value)
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
        "placeholder": plain("What is it for, and why now?"),
    }
    if record.request.reason:
        reason["initial_value"] = record.request.reason
    blocks: list[Block] = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"*{request_title(record.request)}*"},
        },
        input_block(FormBlock.CHOICE, "Option", select),
        input_block(FormBlock.REASON, "Reason for the approvers", reason),
    ]
    if already:
        listed = "; ".join(
            f"*{o.id}* ({o.state.label}, {o.request.count}x {o.request.instance_type} "
            f"{when(o.window[0])} → {when(o.window[1])})"
            for o in already[:5]
        )
        warning = (
            f":warning: You already asked for this type over an overlapping window: {listed}. "
            "Submit only if you need both."
        )
        blocks.insert(
            1, {"type": "section", "text": {"type": "mrkdwn", "text": clip(warning, 3000)}}
        )
    return modal(CallbackId.SUBMIT, "Submit for approval", "Submit", blocks, metadata)


def approve_form(record: CapacityRecord, metadata: dict[str, str]) -> View:
    """The money confirm of Approve, with the amount; opened only for someone who may."""
    amount = usd(record.most_usd)
    blocks: list[Block] = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip(approval_question(record), 3000)},
        }
    ]
    return modal(
        CallbackId.APPROVE, "Approve this purchase?", _approve_label(amount), blocks, metadata
    )


def extension_approve_form(
    request_id: str, offer: ExtensionOffer, metadata: dict[str, str]
) -> View:
    """The money confirm of an extension's Approve, with the amount."""
    question = (
        f"Approve *{usd(offer.fee_usd)}* to extend *{esc(request_id)}* by "
        f"{human_duration(timedelta(hours=offer.hours))}, to {when(offer.end)}? It is paid up "
        "front and cannot be cancelled."
    )
    blocks: list[Block] = [section(question)]
    label = _approve_label(usd(offer.fee_usd))
    return modal(CallbackId.EXTENSION_APPROVE, "Approve extension?", label, blocks, metadata)


def _approve_label(amount: str) -> str:
    """The submit button names the amount when it fits Slack's 24 characters."""
    label = f"Approve {amount}"
    return label if len(label) <= 24 else "Approve"


def reject_form(record: CapacityRecord, metadata: dict[str, str]) -> View:
    question = f"Reject request *{record.id}* ({request_title(record.request)})?"
    return _reason_form(CallbackId.REJECT, "Reject request", question, metadata)


def extension_reject_form(request_id: str, offer: ExtensionOffer, metadata: dict[str, str]) -> View:
    question = (
        f"Reject extending *{esc(request_id)}* by {human_duration(timedelta(hours=offer.hours))} "
        f"to {when(offer.end)} ({usd(offer.fee_usd)})?"
    )
    return _reason_form(CallbackId.EXTENSION_REJECT, "Reject extension", question, metadata)


def _reason_form(callback: CallbackId, title: str, question: str, metadata: dict[str, str]) -> View:
    reason: Block = {"type": "plain_text_input", "multiline": True, "max_length": 500}
    blocks: list[Block] = [
        section(question),
        input_block(FormBlock.REJECT_REASON, "Reason (sent to the requester)", reason),
    ]
    return modal(callback, title, "Reject", blocks, metadata)


def deadline_note(record: CapacityRecord) -> str:
    if record.approval_deadline is None:
        return ""
    return f"Approvers have until {when(record.approval_deadline)}."
