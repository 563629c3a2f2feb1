"""README.md, run as a new user runs it: `make run` (as a subprocess, with
STRATA_HOME in a temporary folder and STRATA_PORT free), then every ```sh block
in order, each line as typed, in a shell whose folder looks like the
repository root to the commands (its `.strata` is that system's home, its
`examples` the repository's). Each command's output is checked against what
kube-apiserver v1.36 printed for the same command (../shared/kube/with_kube.sh),
so a README change that breaks a command, or one that adds a command nobody
checks, fails here. Every block must be claimed by a test in RUNNERS."""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from strata.dev import free_port
from tests.support.make_run import (
    AGE,
    Check,
    MakeRun,
    Terminal,
    prints,
    start_watch,
    tables,
)
from tests.support.readme import not_served, shell_block, shell_blocks

ROOT = Path(__file__).resolve().parents[2]
KUBE_DISCOVERY = ROOT / "tests" / "support" / "kube_discovery.json"

# Every README shell block, by ShellBlock.key, and the tests that run it.
RUNNERS: dict[str, tuple[str, ...]] = {
    "Two commands: make run": (
        "tests.e2e.test_readme::test_make_run_prints_where_the_system_is",
        "tests.e2e.test_readme::test_make_test_runs_the_whole_suite",
    ),
    "Two commands: export KUBECONFIG=.strata/kubeconfig": (
        "tests.e2e.test_readme::test_first_hour_with_kubectl",
    ),
    "Custom resources: kubectl apply -f examples/crontab-crd.yaml": (
        "tests.e2e.test_readme::test_custom_resource_walkthrough",
    ),
    "Benchmarks: .venv/bin/python bench/api.py": (
        "tests.e2e.test_readme_benchmarks::test_benchmark_command",
    ),
}


def test_every_readme_block_is_run_by_a_test() -> None:
    keys = [b.key for b in shell_blocks()]
    assert len(keys) == len(set(keys)), f"two README blocks share a key: {keys}"
    unclaimed = [key for key in keys if key not in RUNNERS]
    assert not unclaimed, f"README shell blocks no test runs (add them to RUNNERS): {unclaimed}"
    stale = set(RUNNERS) - set(keys)
    assert not stale, f"RUNNERS names blocks README lacks: {stale}"
    for runners in RUNNERS.values():
        for runner in runners:
            module, name = runner.split("::")
            assert callable(getattr(importlib.import_module(module), name, None)), runner


# The system, started the README way, and the user's shell.


@pytest.fixture(scope="module")
def make_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    home = tmp_path_factory.mktemp("readme") / "home"
    port = free_port()
    env = {**os.environ, "STRATA_HOME": str(home), "STRATA_PORT": str(port)}
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        ["make", "run"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    running = MakeRun(process, home, port)
    try:
        running.up.wait(180)
        assert any("export KUBECONFIG=" in line for line in running.output), running.output
        yield running
    finally:
        running.stop()
        assert process.stdout is not None
        process.stdout.close()


@pytest.fixture(scope="module")
def terminal(make_run: MakeRun, tmp_path_factory: pytest.TempPathFactory) -> Terminal:
    root = tmp_path_factory.mktemp("user")
    (root / ".strata").symlink_to(make_run.home)
    (root / "examples").symlink_to(ROOT / "examples")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    shell = Terminal(root, env)
    # A later block runs in the terminal the earlier ones set up.
    for earlier in shell_blocks():
        for command in earlier.commands:
            if command.startswith("export "):
                shell.export(command)
    return shell


# Checks of what a command printed, each recorded from kube-apiserver v1.36.

NAMESPACES = ("default", "demo", "kube-node-lease", "kube-public", "kube-system")
FIRST_HOUR: dict[str, Check] = {
    "kubectl create namespace demo": prints("namespace/demo created\n"),
    "kubectl -n demo create configmap a --from-literal=k=v": prints("configmap/a created\n"),
    "kubectl -n demo get configmaps": tables((["NAME", "DATA", "AGE"], [["a", "1", AGE]])),
    "kubectl -n demo delete configmap a": prints('configmap "a" deleted\n'),
    "kubectl get namespaces": tables(
        (["NAME", "STATUS", "AGE"], [[re.escape(n), "Active", AGE] for n in NAMESPACES])
    ),
    "kubectl -n demo create secret generic creds --from-literal=user=admin": prints(
        "secret/creds created\n"
    ),
    "kubectl -n demo create serviceaccount builder": prints("serviceaccount/builder created\n"),
    "kubectl -n demo create deployment web --image=nginx:1.27 --replicas=2": prints(
        "deployment.apps/web created\n"
    ),
    "kubectl -n demo scale deployment web --replicas=4": prints("deployment.apps/web scaled\n"),
    "kubectl -n demo create service nodeport web --tcp=80:8080": prints("service/web created\n"),
    "kubectl -n demo get all": tables(
        (
            ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
            [
                [
                    "service/web",
                    "NodePort",
                    r"10\.96\.\d+\.\d+",
                    "<none>",
                    r"80:3\d{4}/TCP",
                    AGE,
                ]
            ],
        ),
        (
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
            [["deployment.apps/web", "0/4", "0", "0", AGE]],
        ),
    ),
}
# kube printed exactly these two events for the block's watch.
WATCHED = [("ADDED", "a", {"k": "v"}), ("DELETED", "a", {"k": "v"})]


def test_make_run_prints_where_the_system_is(make_run: MakeRun) -> None:
    shell_block("Two commands: make run")
    text = "".join(make_run.output)
    assert f"strata is up: https://127.0.0.1:{make_run.port}\n" in text, text
    kubeconfig = make_run.home / "kubeconfig"
    assert f"  export KUBECONFIG={kubeconfig}\n" in text, text
    assert kubeconfig.is_file()


def test_make_test_runs_the_whole_suite() -> None:
    """`make test` is this suite: running it here would recurse, so what its
    recipe runs is checked instead (make -n prints the commands in order)."""
    assert "make test" in "".join(shell_block("Two commands: make run").commands)
    result = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    commands = [line for line in result.stdout.splitlines() if line.strip()]
    wanted = (
        "protos/generate.py --check",
        "ruff check .",
        "ruff format --check .",
        "bin/mypy",
        "bin/lint-imports --no-cache",
        "-m pytest",
    )
    at = [next(i for i, c in enumerate(commands) if w in c) for w in wanted]
    assert at == sorted(at) and "pytest" in commands[-1], commands


def test_first_hour_with_kubectl(terminal: Terminal) -> None:
    commands = shell_block("Two commands: export KUBECONFIG=.strata/kubeconfig").commands
    assert commands[0] == "export KUBECONFIG=.strata/kubeconfig"
    watch = None
    try:
        for command in commands[1:]:
            if " -w " in f"{command} ":
                assert watch is None and command.endswith("--output-watch-events -o json")
                watch = start_watch(terminal, command)
                continue
            assert command in FIRST_HOUR, f"README command with no check here: {command!r}"
            FIRST_HOUR[command](terminal.run(command))
        assert watch is not None, "the block's watch is gone: update WATCHED"
        assert watch.events() == WATCHED
    finally:
        if watch is not None:
            watch.kill()


# kube-apiserver v1.36's `kubectl explain crontabs.spec` for examples/crontab-crd.yaml.
EXPLAIN = (
    "GROUP:      stable.example.com\nKIND:       CronTab\nVERSION:    v1\n\n"
    "FIELD: spec <Object>\n\n\nDESCRIPTION:\n    What the CronTab runs, and when.\n    \n"
    "FIELDS:\n"
    "  cronSpec\t<string> -required-\n    When to run, in cron's five fields.\n\n"
    "  image\t<string> -required-\n    The container image to run.\n\n"
    "  replicas\t<integer>\n    How many copies to run at each time.\n\n\n"
)
CRD = "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com"
CUSTOM: dict[str, Check] = {
    "kubectl apply -f examples/crontab-crd.yaml": prints(f"{CRD} created\n"),
    "kubectl wait --for=condition=Established crd/crontabs.stable.example.com": prints(
        f"{CRD} condition met\n"
    ),
    "kubectl explain crontabs.spec": prints(EXPLAIN),
    "kubectl apply --server-side -f examples/nightly-crontab.yaml": prints(
        "crontab.stable.example.com/nightly serverside-applied\n"
    ),
    # replicas 1: the schema's default, filled in by the server.
    "kubectl get crontabs": tables(
        (["NAME", "SPEC", "REPLICAS", "AGE"], [["nightly", r"0 3 \* \* \*", "1", AGE]])
    ),
}


def test_custom_resource_walkthrough(terminal: Terminal) -> None:
    commands = shell_block("Custom resources: kubectl apply -f examples/crontab-crd.yaml").commands
    for command in commands:
        for word in shlex.split(command):
            if word.endswith(".yaml"):
                assert (ROOT / word).is_file(), f"{command!r} names a file not in the repo"
        assert command in CUSTOM, f"README command with no check here: {command!r}"
        CUSTOM[command](terminal.run(command))


def _served(terminal: Terminal) -> dict[str, set[str]]:
    """strata's discovery: group -> resources and subresources, every version."""

    def raw(path: str) -> Any:
        result = terminal.run(f"kubectl get --raw {path}")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    served = {"": {r["name"] for r in raw("/api/v1")["resources"]}}
    for group in raw("/apis")["groups"]:
        served[group["name"]] = {
            r["name"]
            for version in group["versions"]
            for r in raw(f"/apis/{group['name']}/{version['version']}")["resources"]
        }
    return served


# Answered, but not listed in strata's discovery yet (README says so).
SERVED_OUTSIDE_DISCOVERY = {("authentication.k8s.io", "selfsubjectreviews")}


def test_readme_lists_what_is_not_served(terminal: Terminal) -> None:
    """The README's "Not served yet" list is exactly what kube v1.36's discovery
    has and strata's lacks: whole groups, resources of the groups strata serves,
    and subresources of the resources it serves."""
    kube = {g: set(r) for g, r in json.loads(KUBE_DISCOVERY.read_text())["groups"].items()}
    served = _served(terminal)
    listed = not_served()
    assert listed.groups == set(kube) - set(served)
    missing: dict[str, set[str]] = {}
    for group, names in kube.items():
        if group in served:
            for name in names - served[group]:
                parent = name.split("/", 1)[0]
                if (group, name) not in SERVED_OUTSIDE_DISCOVERY and (
                    "/" not in name or parent in served[group]
                ):
                    missing.setdefault(group, set()).add(name)
    assert {g: set(r) for g, r in listed.resources.items()} == missing
    whoami = terminal.run("kubectl auth whoami -o json")
    assert json.loads(whoami.stdout)["kind"] == "SelfSubjectReview", whoami


def test_ctrl_c_stops_everything(make_run: MakeRun) -> None:
    """README: Ctrl-C or SIGTERM stops everything (last: it ends the module's system)."""
    assert make_run.stop(signal.SIGINT, within=30), "make run's processes outlived Ctrl-C"
    assert "strata stopped\n" in make_run.output, make_run.output
