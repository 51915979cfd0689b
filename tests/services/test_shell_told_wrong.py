"""What a second week in `gpu-bot shell` told people wrong, as scripts fed to the real
session: each test is one thing someone was told, and what they are told now."""

from __future__ import annotations

from tests.shell_runner import run_shell_here, section

ON_DEMAND_FOR_A_DAY = [
    '/gpu reserve 1x p5.48xlarge 1d from tomorrow ec2 reason="eval"',
    "press 1",
    "1",  # On-Demand
    "",
    "as alice",
    "press 1",
    "y",
    "as you",
]


def test_a_blocks_instance_is_terminated_by_aws_not_left_for_cleanup() -> None:
    script = [
        '/gpu reserve 2x p5.48xlarge 2d from tomorrow ec2 reason="eval"',
        "press 1",
        "",
        "",
        "as alice",
        "press 1",
        "y",
        "as you",
        "clock +36h",  # the block is active
        "launch 1 into R1",
        "clock +2d",  # AWS terminated it 30 minutes before the end
        "clock +5m",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    ended = out.split("you> clock +2d", 1)[1]
    assert "Request R1 has ended, and this is still there" not in ended
    assert "Still costing" not in ended
    assert "Request R1 is cleaned up: nothing tagged for it is left." in ended
    assert ":bar_chart: Request R1 has ended: 2 x p5.48xlarge (Capacity Block)." in ended


def test_leftovers_handed_to_the_approvers_have_their_own_heading_and_buttons() -> None:
    script = [
        *ON_DEMAND_FOR_A_DAY,
        "clock +36h",
        "launch 1 into R1",  # left running past the window
        "clock +2d",  # the cleanup prompt
        "press 3",  # Not mine
        "as alice",
        "home",
        "/gpu list waiting",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    for shown in (section(out, "App Home of @alice"), out.split("alice> /gpu list waiting")[1]):
        assert "Waiting for approval" not in shown
        leftovers = shown.split("*Left after the end, handed to the approvers", 1)[1]
        assert "*R1*" in leftovers and "[1] Clean up now  [2] Keep for a day" in leftovers
    assert "*Left after the end, handed to the approvers (1)*" in section(out, "App Home of @alice")
