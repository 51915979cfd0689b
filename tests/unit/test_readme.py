from __future__ import annotations

from pathlib import Path

from bot.config import Settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_documents_every_setting() -> None:
    for env, _default, _accepted in Settings.describe():
        assert f"`{env}`" in README, env


def test_readme_documents_every_shell_command() -> None:
    from bot.shell.session import HELP

    listed = HELP.split("In a form:")[0].splitlines()[1:]  # "  press N   click ..."
    names = [line.split()[0] for line in listed]
    assert {"press", "show", "as", "whoami", "home", "clock", "worker"} <= set(names)
    for name in names:
        assert f"| `{name}" in README, name
