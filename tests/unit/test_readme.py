from __future__ import annotations

from pathlib import Path

from bot.config import Settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_documents_every_setting() -> None:
    for env, _default, _accepted in Settings.describe():
        assert f"`{env}`" in README, env
