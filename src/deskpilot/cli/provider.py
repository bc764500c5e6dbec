"""``deskpilot provider configure|health|capability|parse``: translate to deskpilot.provider."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import sys
from pathlib import Path
from typing import Any

import typer

from deskpilot.provider import ProviderError, Verdict, evaluate, load_config, tools_from_json
from deskpilot.provider.config.files import (
    CONFIG_SCHEMA,
    config_path,
    normalise_config_file,
    parse_config_file,
    write_config_file,
)
from deskpilot.provider.config.keystore import (
    choose_storage,
    key_from_env,
    load_stored_key,
    store_key,
)
from deskpilot.provider.config.profiles import DEFAULT_PROFILE, ENV_PREFIX
from deskpilot.provider.config.runtime_policy import check_profile
from deskpilot.provider.config.settings import check_base_url
from deskpilot.provider.contract.bounded_json import JSONRejected, loads
from deskpilot.provider.contract.manifest import read_manifest_data
from deskpilot.provider.contract.validator import self_test, validate_manifest
from deskpilot.provider.diagnostics import capability as run_capability
from deskpilot.provider.diagnostics import health as run_health
from deskpilot.provider.tools import ToolSpec, select_tools

app = typer.Typer(
    help="Provider tooling for OpenAI-compatible chat endpoints (local JSON action protocol).",
    no_args_is_help=True,
)


def _emit(data: Any) -> None:
    sys.stdout.buffer.write((json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8"))
    sys.stdout.flush()


def _fail(err: ProviderError, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {err.code}: {err.message}", err=True)
    return typer.Exit(code)


def _pick(option: str | None, env_name: str, stored: Any) -> str | None:
    if option:
        return option
    if os.environ.get(env_name, "").strip():
        return os.environ[env_name].strip()
    return stored if isinstance(stored, str) and stored else None


@app.command()
def configure(
    base_url: str | None = typer.Option(None, help="API root, e.g. https://host/v1."),
    model: str | None = typer.Option(None, help="Model name."),
    profile: str | None = typer.Option(None, help="reliability | balanced | low-latency."),
    no_prompt: bool = typer.Option(False, "--no-prompt", help="Never ask on the terminal."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be written."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    verify: bool = typer.Option(False, "--verify", help="Send a real health request after."),
) -> None:
    """Write the provider config. The key comes from DESKPILOT_PROVIDER_API_KEY or hidden
    terminal entry; there is deliberately no flag for it (shell history)."""
    env = dict(os.environ)
    path = config_path(env)
    interactive = sys.stdin.isatty() and not no_prompt
    try:
        backup = None if dry_run else normalise_config_file(path)
        data, _ = parse_config_file(path)
        url = _pick(base_url, ENV_PREFIX + "BASE_URL", data.get("baseUrl"))
        if url is None and interactive:
            url = input("Base URL (API root, e.g. https://host/v1): ").strip()
        name = _pick(model, ENV_PREFIX + "MODEL", data.get("model"))
        if name is None and interactive:
            name = input("Model: ").strip()
        if not url or not name:
            raise ProviderError("configuration_invalid", "base URL and model are required")
        url = check_base_url(url)
        chosen_profile = check_profile(
            _pick(profile, ENV_PREFIX + "PROFILE", data.get("profile")) or DEFAULT_PROFILE
        )
        key, key_source = key_from_env(env)
        stored_key, _ = load_stored_key(data.get("keyStorage"), env)
        if key is None and stored_key is None and interactive:
            key = getpass.getpass("API key (input hidden): ").strip() or None
            key_source = "prompt" if key else None
        storage = data.get("keyStorage")
        key_location = None
        if key is not None:
            storage = choose_storage(env)
            if not dry_run:
                key_location = store_key(key, storage, env)
        new = {k: v for k, v in data.items() if k in ("limits", "debug")}
        new.update(
            {"schema": CONFIG_SCHEMA, "baseUrl": url, "model": name, "profile": chosen_profile}
        )
        if storage:
            new["keyStorage"] = storage
        if not dry_run:
            write_config_file(path, new)
    except ProviderError as err:
        raise _fail(err) from None
    key_state = "stored" if key else ("kept" if stored_key else "missing")
    result: dict[str, Any] = {
        "configPath": str(path),
        "dryRun": dry_run,
        "config": new,
        "apiKey": key_state,
        "apiKeySource": key_source if key else None,
        "keyStorage": storage,
        "keyLocation": key_location,
        "encodingBackup": str(backup) if backup else None,
    }
    ok = True
    if verify and not dry_run:
        try:
            config = load_config(require_key=True)
        except ProviderError as err:
            raise _fail(err, 1) from None
        result["health"] = asyncio.run(run_health(config))
        ok = bool(result["health"]["ok"])
    if as_json:
        _emit(result)
    else:
        typer.echo(f"config: {path}{' (dry run, not written)' if dry_run else ''}")
        typer.echo(f"endpoint: {url}/chat/completions  model: {name}  profile: {chosen_profile}")
        where = f" in {storage}" if storage else ""
        typer.echo(f"api key: {key_state}{where}" + (f" ({key_location})" if key_location else ""))
        if backup:
            typer.echo(f"re-encoded as UTF-8; original kept at {backup}")
        if "health" in result:
            typer.echo("health: " + json.dumps(result["health"], ensure_ascii=False))
    if not ok:
        raise typer.Exit(1)


def _load(require_key: bool = True) -> Any:
    try:
        return load_config(require_key=require_key)
    except ProviderError as err:
        raise _fail(err) from None


@app.command()
def health() -> None:
    """One real request (max_tokens 1, no tools); prints JSON, exit 1 when unhealthy."""
    result = asyncio.run(run_health(_load()))
    _emit(result)
    if not result["ok"]:
        raise typer.Exit(1)


@app.command()
def capability(
    json_action_runs: int = typer.Option(3, min=0, max=20, help="Runs of the JSON action probe."),
    skip_native_probes: bool = typer.Option(False, help="Do not probe native tools / role=tool."),
) -> None:
    """Probe plain_chat, json_object, json_schema_strict, native tools, role_tool_followup and
    json_action_N; prints JSON with recommendedMode; exit 1 when no probe succeeded."""
    result = asyncio.run(
        run_capability(_load(), json_action_runs=json_action_runs, skip_native=skip_native_probes)
    )
    _emit(result)
    probes: dict[str, Any] = result.get("probes") or {}
    if not any(isinstance(p, dict) and p.get("ok") for p in probes.values()):
        # nothing answered (a wrong key, an unreachable endpoint): not a capability verdict
        first: Any = next(iter(probes.values()), {})
        cause = first.get("error") or first.get("reason") if isinstance(first, dict) else None
        typer.echo(f"error: no capability probe succeeded ({cause or 'no probe ran'})", err=True)
        raise typer.Exit(1)


def _read_tools(path: Path) -> list[ToolSpec]:
    try:
        data = loads(path.read_bytes().decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, JSONRejected) as exc:
        raise ProviderError("invalid_input", f"cannot read the tool list {path}: {exc}") from None
    return tools_from_json(data)


def _verdict(raw: str, tools: list[ToolSpec], selected: list[str] | None) -> Verdict:
    by_name = {t.name: t for t in tools}
    if selected is not None:
        unknown = [n for n in selected if n not in by_name]
        if unknown:
            raise ProviderError("invalid_input", f"selected tools not in the list: {unknown}")
    only = selected if selected is not None else list(by_name)
    selection = select_tools(tools, [], max_tools=max(1, len(tools)), only=only)
    return evaluate(raw, selected=selection.names, tools=by_name)


def _invalid_line() -> dict[str, Any]:
    return {"ok": False, "error": "invalid_input", "repairable": False}


@app.command()
def parse(
    tools: Path = typer.Option(
        ..., "--tools", help="JSON array of {name, description, parameters}."
    ),
    selected: str | None = typer.Option(None, help="Comma-separated tools shown to the model."),
    jsonl: bool = typer.Option(False, "--jsonl", help='stdin lines: {"raw": ..., "selected": ...}'),
) -> None:
    """Parse raw model output against a tool list and print one verdict per input."""
    try:
        tool_list = _read_tools(tools)
        chosen = None if selected is None else [s.strip() for s in selected.split(",") if s.strip()]
        if chosen is not None:
            _verdict("", tool_list, chosen)  # reject unknown names up front
    except ProviderError as err:
        raise _fail(err) from None
    stdin = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not jsonl:
        _emit(_verdict(stdin, tool_list, chosen).to_json())
        return
    for line in stdin.splitlines():
        if not line.strip():
            continue
        try:
            item = loads(line)
            if not isinstance(item, dict) or not isinstance(item.get("raw"), str):
                raise ValueError("raw")
            line_sel = item.get("selected")
            if line_sel is not None and (
                not isinstance(line_sel, list) or not all(isinstance(s, str) for s in line_sel)
            ):
                raise ValueError("selected")
            verdict = _verdict(item["raw"], tool_list, chosen if line_sel is None else line_sel)
        except (ValueError, ProviderError):
            _emit(_invalid_line())
            continue
        _emit(verdict.to_json())


@app.command()
def contract() -> None:
    """Validate the packaged error manifest and run the validator's self-test."""
    data = read_manifest_data()
    problems = validate_manifest(data)
    failures = self_test(data)
    _emit({"ok": not problems and not failures, "problems": problems, "selfTest": failures})
    if problems or failures:
        raise typer.Exit(1)
