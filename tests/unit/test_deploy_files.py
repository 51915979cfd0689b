"""The deploy files parse, and name the commands and settings that exist."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from bot.cli import build_parser
from bot.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_iam_policies_are_valid_json_with_statements() -> None:
    for name in ("iam-quote-policy.json", "iam-purchase-policy.json", "iam-deploy-policy.json"):
        policy = json.loads((ROOT / "deploy" / name).read_text())
        assert policy["Version"] == "2012-10-17"
        assert policy["Statement"]


def test_kubernetes_manifests_use_real_commands_and_settings() -> None:
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    variables = {env for env, _d, _a in Settings.describe()}
    docs = [
        (path.name, doc)
        for path in sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    config_maps = [doc for _name, doc in docs if doc["kind"] == "ConfigMap"]
    deployments = {name: doc for name, doc in docs if doc["kind"] == "Deployment"}
    # Something is checked: the config and both deployments exist.
    assert config_maps and {"serve.yaml", "worker.yaml"} <= set(deployments)
    for config in config_maps:
        assert set(config["data"]) <= variables
    for name, doc in deployments.items():
        (container,) = doc["spec"]["template"]["spec"]["containers"]
        assert container["args"][0] == "gpu-bot", name
        assert container["args"][1] in commands, name


def test_dockerfile_runs_as_non_root_with_a_health_check() -> None:
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    assert lines[1].startswith("FROM python:3.11-slim")
    user = next(line for line in lines if line.startswith("USER "))
    assert user != "USER root"
    assert any(line.startswith("HEALTHCHECK") for line in lines)
    assert lines[-1] == 'CMD ["gpu-bot", "serve", "--port", "3000"]'
    # Dependencies are installed before the source is copied, in their own layer.
    deps = next(i for i, line in enumerate(lines) if "pip install -r" in line)
    source = next(i for i, line in enumerate(lines) if line.startswith("COPY bot"))
    assert deps < source


def test_the_image_installs_what_serve_runs_and_carries_every_package() -> None:
    import tomllib

    text = (ROOT / "Dockerfile").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    packages = {"bot", "handlers", "aws_sandbox"}
    assert all(f"COPY {p} ./{p}" in text for p in packages)
    # The charts extra (serve's worker draws the card's chart), not memory:// nor dev.
    assert "['optional-dependencies']['charts']" in text
    assert "matplotlib" not in " ".join(project["dependencies"])
    assert "fakeredis" not in " ".join(project["dependencies"])
