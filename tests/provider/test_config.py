"""Profiles, bounds, environment (with legacy aliases) and the config file; fail closed."""

from __future__ import annotations

import codecs
import json
import os
import stat
from pathlib import Path

import pytest

from deskpilot.provider import ProviderConfig, ProviderError, RuntimePolicy, load_config
from deskpilot.provider.config import resolve_policy
from deskpilot.provider.config.files import (
    decode_config_bytes,
    normalise_config_file,
    parse_config_file,
)
from deskpilot.provider.config.profiles import KNOBS

BASE = {"DESKPILOT_PROVIDER_BASE_URL": "https://llm.example/v1", "DESKPILOT_PROVIDER_MODEL": "m1"}


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"DESKPILOT_DATA_DIR": str(tmp_path), "HOME": str(tmp_path), **BASE, **extra}


def code_of(fn, *a, **kw) -> str:
    with pytest.raises(ProviderError) as info:
        fn(*a, **kw)
    return info.value.code


def test_reliability_defaults_match_the_documented_numbers() -> None:
    p = RuntimePolicy.for_profile("reliability")
    assert (p.max_tools, p.request_attempts, p.per_attempt_timeout_ms, p.total_deadline_ms) == (
        16,
        3,
        60_000,
        180_000,
    )
    assert (p.max_tool_result_chars, p.max_tool_history_chars) == (20_000, 60_000)
    assert (p.max_output_tokens, p.max_response_bytes) == (8192, 4_194_304)
    assert (p.retry_delay_ms, p.retry_max_delay_ms, p.retry_jitter_ms, p.retry_after_max_ms) == (
        1000,
        8000,
        250,
        30_000,
    )
    assert (
        p.max_empty_recoveries,
        p.max_format_recoveries,
        p.max_final_recoveries,
        p.max_repeated_call_recoveries,
        p.max_repair_recoveries_total,
        p.max_total_recoveries,
    ) == (2, 1, 1, 1, 2, 3)


@pytest.mark.parametrize("profile", ["reliability", "balanced", "low-latency"])
def test_every_profile_is_within_bounds(profile: str) -> None:
    policy = RuntimePolicy.for_profile(profile)
    for knob in KNOBS:
        assert knob.low <= getattr(policy, knob.field) <= knob.high


def test_profiles_differ_and_env_selects(tmp_path: Path) -> None:
    assert RuntimePolicy.for_profile("low-latency").max_tools < 16
    cfg = load_config(env(tmp_path, DESKPILOT_PROVIDER_PROFILE="balanced"))
    assert cfg.profile == "balanced" and cfg.limits == RuntimePolicy.for_profile("balanced")


def test_env_overrides_with_sources(tmp_path: Path) -> None:
    cfg = load_config(
        env(tmp_path, DESKPILOT_PROVIDER_MAX_TOOLS="4", DESKPILOT_PROVIDER_REQUEST_ATTEMPTS="5")
    )
    assert cfg.limits.max_tools == 4 and cfg.limits.request_attempts == 5
    assert cfg.sources["limits.max_tools"] == "env:DESKPILOT_PROVIDER_MAX_TOOLS"
    assert cfg.sources["limits.total_deadline_ms"] == "profile:reliability"


def test_legacy_aliases_are_read(tmp_path: Path) -> None:
    cfg = load_config(
        env(
            tmp_path,
            DESKPILOT_PROVIDER_TIMEOUT_MS="5000",
            DESKPILOT_PROVIDER_MAX_EMPTY_RETRIES="1",
            DESKPILOT_PROVIDER_MAX_REPAIR_RETRIES="1",
        )
    )
    assert cfg.limits.per_attempt_timeout_ms == 5000
    assert cfg.limits.max_empty_recoveries == 1
    assert cfg.limits.max_repair_recoveries_total == 1
    assert cfg.sources["limits.per_attempt_timeout_ms"] == "env:DESKPILOT_PROVIDER_TIMEOUT_MS"


@pytest.mark.parametrize(
    "extra",
    [
        {"DESKPILOT_PROVIDER_MAX_TOOLS": "0"},
        {"DESKPILOT_PROVIDER_MAX_TOOLS": "129"},
        {"DESKPILOT_PROVIDER_MAX_TOOLS": "ten"},
        {"DESKPILOT_PROVIDER_MAX_TOOLS": "-3"},
        {"DESKPILOT_PROVIDER_REQUEST_ATTEMPTS": "9"},
        {"DESKPILOT_PROVIDER_PER_ATTEMPT_TIMEOUT_MS": "1.5"},
        {"DESKPILOT_PROVIDER_PROFILE": "turbo"},
        {
            "DESKPILOT_PROVIDER_PER_ATTEMPT_TIMEOUT_MS": "9000",
            "DESKPILOT_PROVIDER_TOTAL_DEADLINE_MS": "5000",
        },
        {
            "DESKPILOT_PROVIDER_RETRY_DELAY_MS": "5000",
            "DESKPILOT_PROVIDER_RETRY_MAX_DELAY_MS": "10",
        },
        {
            "DESKPILOT_PROVIDER_MAX_REPAIR_RECOVERIES_TOTAL": "5",
            "DESKPILOT_PROVIDER_MAX_TOTAL_RECOVERIES": "2",
        },
        {
            "DESKPILOT_PROVIDER_MAX_TOOL_RESULT_CHARS": "50000",
            "DESKPILOT_PROVIDER_MAX_TOOL_HISTORY_CHARS": "1000",
        },
        {
            "DESKPILOT_PROVIDER_PER_ATTEMPT_TIMEOUT_MS": "5000",
            "DESKPILOT_PROVIDER_TIMEOUT_MS": "6000",
        },
        {"DESKPILOT_PROVIDER_DEBUG": "maybe"},
        {"DESKPILOT_PROVIDER_BASE_URL": "https://llm.example/v1/chat/completions"},
        {"DESKPILOT_PROVIDER_BASE_URL": "https://llm.example/v1/responses"},
        {"DESKPILOT_PROVIDER_BASE_URL": "ftp://llm.example/v1"},
        {"DESKPILOT_PROVIDER_API_KEY": "a", "DESKPILOT_API_KEY": "b"},
    ],
)
def test_invalid_values_fail_closed_before_any_request(
    tmp_path: Path, extra: dict[str, str]
) -> None:
    assert code_of(load_config, env(tmp_path, **extra)) == "configuration_invalid"


def test_agreeing_alias_and_canonical_are_fine(tmp_path: Path) -> None:
    cfg = load_config(
        env(
            tmp_path,
            DESKPILOT_PROVIDER_PER_ATTEMPT_TIMEOUT_MS="5000",
            DESKPILOT_PROVIDER_TIMEOUT_MS="5000",
        )
    )
    assert cfg.limits.per_attempt_timeout_ms == 5000


def test_missing_endpoint_or_key(tmp_path: Path) -> None:
    assert (
        code_of(load_config, {"HOME": str(tmp_path), "DESKPILOT_DATA_DIR": str(tmp_path)})
        == "configuration_invalid"
    )
    cfg = load_config(env(tmp_path))
    assert cfg.api_key is None and cfg.describe()["apiKey"] == "missing"
    assert code_of(load_config, env(tmp_path), require_key=True) == "api_key_missing"
    keyed = load_config(env(tmp_path, DESKPILOT_PROVIDER_API_KEY="sk-abc"))
    assert (
        keyed.api_key == "sk-abc" and keyed.sources["api_key"] == "env:DESKPILOT_PROVIDER_API_KEY"
    )
    assert "sk-abc" not in repr(keyed) and "sk-abc" not in json.dumps(keyed.describe())


def test_endpoint_appends_chat_completions() -> None:
    cfg = ProviderConfig(base_url="https://llm.example/v1/", model="m")
    assert cfg.endpoint == "https://llm.example/v1/chat/completions"


def test_config_file_and_precedence(tmp_path: Path) -> None:
    (tmp_path / "provider.json").write_text(
        json.dumps(
            {
                "baseUrl": "https://file.example/v1",
                "model": "file-model",
                "profile": "balanced",
                "limits": {"max_tools": 5},
            }
        )
    )
    cfg = load_config({"DESKPILOT_DATA_DIR": str(tmp_path), "HOME": str(tmp_path)})
    assert (cfg.base_url, cfg.model, cfg.profile, cfg.limits.max_tools) == (
        "https://file.example/v1",
        "file-model",
        "balanced",
        5,
    )
    cfg2 = load_config(env(tmp_path, DESKPILOT_PROVIDER_MAX_TOOLS="7"))
    assert cfg2.base_url == "https://llm.example/v1" and cfg2.limits.max_tools == 7


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b'{"baseUrl": "https://x/v1", "color": "blue"}',
        b'{"limits": {"max_toolz": 3}}',
        b'{"limits": {"max_tools": "3"}}',
        b"[1, 2]",
        b"\xff\xfe\x00",
    ],
)
def test_bad_config_file_fails_closed(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "provider.json").write_bytes(content)
    assert code_of(load_config, env(tmp_path)) == "configuration_invalid"


DOC = {"baseUrl": "https://enc.example/v1", "model": "m", "profile": "reliability"}


@pytest.mark.parametrize(
    ("encoded", "label"),
    [
        (codecs.BOM_UTF16_LE + json.dumps(DOC).encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + json.dumps(DOC).encode("utf-16-be"), "utf-16-be"),
        (json.dumps(DOC).encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF8 + json.dumps(DOC).encode(), "utf-8-sig"),
        (b"\x00\x00\x00" + json.dumps(DOC).encode(), "utf-8+nul"),
    ],
)
def test_odd_encodings_are_backed_up_and_normalised(
    tmp_path: Path, encoded: bytes, label: str
) -> None:
    path = tmp_path / "provider.json"
    path.write_bytes(encoded)
    assert decode_config_bytes(encoded).encoding == label
    assert (
        load_config({"DESKPILOT_DATA_DIR": str(tmp_path), "HOME": str(tmp_path)}).base_url
        == DOC["baseUrl"]
    )
    backup = normalise_config_file(path)
    assert backup is not None and backup.read_bytes() == encoded
    assert backup.name.startswith("provider.json.bak-") and backup.name.endswith("-encoding")
    raw = path.read_bytes()
    assert not raw.startswith((codecs.BOM_UTF8, b"\x00")) and json.loads(raw) == DOC
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert normalise_config_file(path) is None  # already clean: nothing to do


def test_malformed_utf16_is_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "provider.json"
    bad = codecs.BOM_UTF16_LE + '{"baseUrl": '.encode("utf-16-le")
    path.write_bytes(bad)
    assert code_of(normalise_config_file, path) == "configuration_invalid"
    assert path.read_bytes() == bad
    assert not list(tmp_path.glob("*.bak-*"))


def test_key_file_permissions_are_enforced(tmp_path: Path) -> None:
    (tmp_path / "provider.json").write_text(json.dumps({**DOC, "keyStorage": "file"}))
    key = tmp_path / "provider.key"
    key.write_text("sk-file\n")
    key.chmod(0o600)
    cfg = load_config({"DESKPILOT_DATA_DIR": str(tmp_path), "HOME": str(tmp_path)})
    assert cfg.api_key == "sk-file" and cfg.sources["api_key"] == "file"
    key.chmod(0o644)
    assert (
        code_of(load_config, {"DESKPILOT_DATA_DIR": str(tmp_path), "HOME": str(tmp_path)})
        == "configuration_invalid"
    )


def test_debug_path_from_env(tmp_path: Path) -> None:
    cfg = load_config(
        env(
            tmp_path,
            DESKPILOT_PROVIDER_DEBUG="1",
            DESKPILOT_PROVIDER_DEBUG_PATH=str(tmp_path / "d.jsonl"),
        )
    )
    assert cfg.debug_path == tmp_path / "d.jsonl"
    assert load_config(env(tmp_path, DESKPILOT_PROVIDER_DEBUG="0")).debug_path is None


def test_resolve_policy_rejects_unknown_override() -> None:
    with pytest.raises(ProviderError):
        resolve_policy("reliability", overrides={"max_toolz": 1})
    data, decoded = parse_config_file(Path("/nonexistent/provider.json"))
    assert data == {} and decoded is None
