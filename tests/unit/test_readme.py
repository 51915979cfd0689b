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


def test_readme_says_which_python_it_needs() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    needed = project["project"]["requires-python"].removeprefix(">=")
    assert f"Python {needed} or newer" in README


def test_readme_says_what_is_not_built_yet() -> None:
    section = README.split("### What is built, and what is not yet", 1)[1].split("\n## ", 1)[0]
    assert "Not yet:" in section and "GPU_BOT_AWS=live" in section
