"""Action, callback and block ids shared by the builders and the listeners."""

from __future__ import annotations

from enum import StrEnum


class ActionId(StrEnum):
    SUBMIT_OPEN = "gpu_submit_open"  # open the "submit for approval" form
    CANCEL = "gpu_cancel"
    APPROVE = "gpu_approve"
    REJECT_OPEN = "gpu_reject_open"  # open the "reason for rejecting" form
    EXTEND = "gpu_extend"  # ask to extend a reservation (goes to approval)
    EXTENSION_APPROVE = "gpu_extension_approve"
    EXTENSION_REJECT = "gpu_extension_reject"
    CLEANUP_NOW = "gpu_cleanup_now"
    CLEANUP_KEEP = "gpu_cleanup_keep"
    CLEANUP_NOT_MINE = "gpu_cleanup_not_mine"
    PURCHASE_CHECK = "gpu_purchase_check"  # look in AWS again for an unknown purchase
    PURCHASE_MARK_FAILED = "gpu_purchase_mark_failed"
    EXTENSION_CHECK = "gpu_extension_check"  # look in AWS again for an unknown extension
    EXTENSION_MARK_FAILED = "gpu_extension_mark_failed"
    DEPLOY_OPEN = "gpu_deploy_open"  # open the deploy form for an active plan
    DEPLOY_CLEANUP = "gpu_deploy_cleanup"  # delete a deployment's endpoint
    WATCH_STOP = "gpu_watch_stop"  # stop a watch for capacity
    WATCH_START = "gpu_watch_start"  # watch for what a quote found nothing of (its outlook line)
    RELEASE = "gpu_release"  # give back an idle On-Demand Capacity Reservation before its end


class CallbackId(StrEnum):
    RESERVE_FORM = "gpu_reserve_form"
    SUBMIT = "gpu_submit"
    REJECT = "gpu_reject"
    APPROVE = "gpu_approve_confirm"  # the amount, confirmed: approves the request
    EXTENSION_APPROVE = "gpu_extension_approve_confirm"
    DEPLOY = "gpu_deploy"
    EXTENSION_REJECT = "gpu_extension_reject"


class FormBlock(StrEnum):
    """Block ids of the reserve form; inline errors are keyed by these."""

    COUNT = "count"
    INSTANCE_TYPE = "instance_type"
    DURATION = "duration"
    START_DATE = "start_date"
    START_TIME = "start_time"
    REGION = "region"
    ENVIRONMENT = "environment"
    WORKLOAD = "workload"
    INTERRUPTIBLE = "interruptible"
    UTILIZATION = "utilization"
    REASON = "reason"
    ACCOUNT = "account"
    CHOICE = "choice"
    REJECT_REASON = "reject_reason"
    DEPLOY_PLAN = "deploy_plan"
    DEPLOY_MODELS = "deploy_models"
    DEPLOY_COUNT = "deploy_count"
    DEPLOY_LAYOUT = "deploy_layout"
    DEPLOY_NAME = "deploy_name"


# The same action id may appear on several cards; Slack needs unique ids per message only.
ELEMENT = "value"  # action id of the single element inside each input block
