"""What a second week in `gpu-bot shell` turned up: what people were not asked, not told
or could not see, as scripts fed to the real session."""

from __future__ import annotations

from tests.shell_runner import run_shell_here, section


def test_an_unknown_team_is_refused_naming_the_known_ones() -> None:
    out = run_shell_here(
        "as alice\n/gpu spend nosuchteam\n/gpu spend\n",
        GPU_BOT_BUDGETS="ml-research=5000",
        GPU_BOT_TEAMS="ml-research=C0GENERAL",
    )
    refused = section(out, "ephemeral to alice · message 1")
    assert 'There is no team "nosuchteam"' in refused and "the teams are ml-research" in refused
    listed = section(out, "ephemeral to alice · message 2")
    assert "ml-research" in listed and "$0.00" in listed
