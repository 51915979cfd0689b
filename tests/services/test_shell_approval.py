"""The approval flow in `gpu-bot shell`, run in process (tests/shell_runner.py): reserve,
submit, the requester refused, an approver approves; bad commands; forms; timeouts."""

from __future__ import annotations

import re

import pytest

from tests.integration.test_shell import APPROVAL_SCRIPT, RESERVE, START
from tests.shell_runner import run_shell_here, section


@pytest.fixture(scope="module")
def approval_flow() -> str:
    return run_shell_here(APPROVAL_SCRIPT + "\n")


def test_reserve_shows_the_comparison_in_place_of_the_working_message(approval_flow: str) -> None:
    working = section(approval_flow, "ephemeral to you · message 1")
    assert (
        working
        == "  :hourglass_flowing_sand: Comparing options for 2x p5.48xlarge for 3 days "
        + (f"from {START} 00:00 UTC (us-east-1)…")
    )
    quote = section(approval_flow, "ephemeral to you · message 1, updated in place")
    assert ":star: *Recommended: Capacity Block*" in quote
    assert "Why: \u201cload test <!channel> & co\u201d" in quote  # escaped by Slack, shown as typed
    assert quote.splitlines()[-1] == "  [1] Submit for approval…  [2] Cancel"


def test_submit_opens_the_form_and_posts_the_card_for_approval(approval_flow: str) -> None:
    modal = section(approval_flow, "modal opened for you: Submit for approval")
    assert "  Reason for the approvers: load test <!channel> & co" in modal
    assert "  Option (1-5) [Capacity Block · $" in approval_flow
    assert "  Reason for the approvers [load test <!channel> & co]: \n" in approval_flow
    card = section(approval_flow, "#approvals · message 2")
    assert "  Requester: @you" in card
    assert ":hourglass: *Pending approval* (0 of 1 approvals" in card
    assert card.splitlines()[-1] == "  [1] Approve…  [2] Reject…"
    assert "  :outbox_tray: Submitted R1 (2x p5.48xlarge" in approval_flow


def test_the_requester_approving_their_own_request_is_refused(approval_flow: str) -> None:
    # Refused at once: the money question is never put to the requester.
    mine = approval_flow.split("as alice", 1)[0]
    assert "Approve this purchase?" not in mine
    refusal = section(approval_flow, "ephemeral to you · message 3")
    assert refusal == "  :warning: You cannot approve or reject your own request."
    after = approval_flow.split("as alice", 1)[1]
    form = section(after, "modal opened for alice: Approve this purchase?")
    assert "  Approve *$4,983.55* for 2x p5.48xlarge as a Capacity Block (request R1)?" in form
    assert "  Approve $4,983.55 (y) or Cancel (n)? y\n" in after


def test_an_approver_approves_the_card_updates_and_the_requester_gets_a_dm(
    approval_flow: str,
) -> None:
    assert "You are alice (U0ALICE), an approver." in approval_flow
    after = approval_flow.split("alice> press 1", 1)[1]
    card = section(after, "#approvals · message 2, updated in place")
    assert ":white_check_mark: *Approved* · approved by @alice" in card
    assert "[1] Approve" not in card
    dm = section(after, "DM to @you · message 4")
    assert "Your GPU request *R1*" in dm and "was approved by @alice" in dm
    # The approval hands the request to purchasing: the sandbox sells the block at once.
    bought = section(after, "DM to @you · message 5")
    assert "is now payment pending" in bought and "*Capacity Block* `cr-" in bought
    status = section(after, "ephemeral to alice · message 6")
    assert ":credit_card: *Payment pending*" in status
    assert "purchased by gpu-bot (purchasing → payment_pending)" in status


def test_bad_commands_say_what_is_accepted() -> None:
    script = "\n".join(
        [
            "frobnicate",
            "/gpu frobnicate",
            "/deploy now",
            "press 1",
            "press one",
            "as nobody",
            "clock -1h",
            "clock +2 days",
            "help",
            "exit",
            "whoami",  # after exit: never read
        ]
    )
    out = run_shell_here(script + "\n")
    assert 'Unknown command "frobnicate". Type `help`' in out
    unknown = section(out, "ephemeral to you · message 1")
    assert 'Unknown subcommand "frobnicate". Accepted: reserve, quote' in unknown
    assert "Only /gpu is installed here" in out
    assert "you> press 1\nThe latest output has no buttons: `show N` shows message N" in out
    assert "Which button? `press 1` clicks [1]." in out
    assert "Act as whom? Known: you (U0YOU), alice (U0ALICE), bob (U0BOB)" in out
    assert out.count("The clock moves forward only: `clock +2h`") == 2
    assert "  press N          click button [N] of the latest output" in out
    assert "you> whoami" not in out


def test_the_reserve_form_asks_again_for_what_the_app_refused() -> None:
    script = "\n".join(
        [
            "/gpu reserve 2x p5.48xlarge",
            "",  # Instances [2]
            "",  # Instance type [p5.48xlarge]
            "abc",  # Duration: refused by the app
            START,  # Start date
            "25:00",  # Start time: refused by the shell, as Slack's time picker would
            "",
            "",  # Region
            "2",  # Environment: EC2
            "",  # Workload
            "",  # Interruptions
            "",  # Utilisation
            "",  # Reason
            "3d",  # Duration, asked again
        ]
    )
    out = run_shell_here(script + "\n")
    assert "Filled in from your command; still needed: duration, start." in out
    assert "  ! Give a time as HH:MM, 00:00 to 23:59." in out
    assert '  ! Duration: "abc" is not a valid duration.' in out
    assert "  Duration [abc]: 3d\n" in out
    quote = section(out, "ephemeral to you · message 1, updated in place")
    assert "training · ec2 · 100% expected utilisation" in quote
    assert quote.splitlines()[-1] == "  [1] Submit for approval…  [2] Cancel"


def test_a_pending_request_times_out_when_the_clock_moves_on() -> None:
    script = "\n".join(
        [
            RESERVE,
            "press 1",
            "",
            "",
            "as bob",
            "home",
            "worker",
            "clock +2d",
            "clock",
        ]
    )
    out = run_shell_here(script + "\n")
    home = section(out, "App Home of @bob")
    assert "  *Waiting for approval (1)*" in home
    assert "  [1] Approve…  [2] Reject…" in home
    assert "bob> worker\nNo jobs due.\n" in out
    after = out.split("bob> clock +2d", 1)[1]
    # The timeout, the notify job, and what it fans out to: the card and the requester
    # (and the month's spend summary, when the two days cross the 1st).
    crossed_the_first = "== GPU spend in " in after
    assert f"{5 if crossed_the_first else 4} due jobs ran." in after
    card = section(after, "#approvals · message 2, updated in place")
    assert "  :zzz: *Timed out*" in card
    assert "Approve" not in card
    (heading,) = re.findall(r"── (DM to @you · message \d+) ──", after)
    dm = section(after, heading)
    assert "timed out: nobody decided before" in dm
    assert "bob> clock\nSandbox time: " in after


def test_a_piped_line_that_does_not_answer_a_confirm_runs_as_the_next_command() -> None:
    script = "\n".join([RESERVE, "press 1", "", "", "as alice", "press 1", "as bob", "whoami"])
    out = run_shell_here(script + "\n")
    assert "(y) or Cancel (n)? as bob\n  ! Not answered (y or n)" in out
    assert (
        "Form closed without submitting.\nalice> as bob\nYou are bob (U0BOB), an approver.\n" in out
    )
    assert "bob> whoami\nYou are bob (U0BOB), an approver.\n" in out


def test_press_after_an_output_without_buttons_presses_nothing_older() -> None:
    script = "\n".join([RESERVE, "press 1", "", "", "/gpu status R1", "press 1"])
    out = run_shell_here(script + "\n")
    after = out.split("you> /gpu status R1", 1)[1]
    assert "you> press 1\nThe latest output has no buttons: `show N`" in after
    assert "Approve this purchase?" not in after
