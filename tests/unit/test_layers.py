"""The import contracts in pyproject.toml hold, and a wrong import breaks them: each case
adds one import against the layering to a copy of the code and runs `lint-imports`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def copy_of_the_code(tmp_path: Path) -> Path:
    for package in ("bot", "handlers"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    # The copy comes first on the path, before the installed (editable) package.
    env = os.environ | {"PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def add_import(root: Path, module: str, line: str) -> None:
    path = root / module
    text = path.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    path.write_text(head + sep + line + "\n" + rest)


def test_the_code_keeps_its_contracts(tmp_path: Path) -> None:
    result = lint_imports(copy_of_the_code(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        (
            "bot/services/quoting.py",
            "from bot.adapters.store import RedisStore",
            "Services know adapters only through their ports",
        ),
        ("bot/domain/request.py", "import redis", "The domain is pure: no Slack, AWS or Redis"),
        (
            "bot/domain/records.py",
            "from bot.services.ports import Job",
            "Listeners -> services -> domain, one way",
        ),
        (
            "handlers/home.py",
            "from bot.app import build_services",
            "Only entry points import the composition root",
        ),
        (
            "handlers/views.py",
            "from bot.adapters.slack.notifier import SlackNotifier",
            "Listeners see services, not adapters",
        ),
    ],
)
def test_a_wrong_import_fails(tmp_path: Path, module: str, line: str, contract: str) -> None:
    root = copy_of_the_code(tmp_path)
    add_import(root, module, line)
    result = lint_imports(root)
    assert result.returncode != 0, result.stdout
    assert f"{contract} BROKEN" in result.stdout, result.stdout
