"""The error manifest: one source for codes, categories, retry semantics and HTTP mapping."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest
from provider_helpers import CLI

from deskpilot.provider import ProviderError
from deskpilot.provider.contract import load_contract
from deskpilot.provider.contract.manifest import read_manifest_data
from deskpilot.provider.contract.validator import self_test, validate_manifest


def test_packaged_manifest_is_valid_and_self_test_passes() -> None:
    data = read_manifest_data()
    assert validate_manifest(data) == []
    assert self_test(data) == []


def test_http_classification() -> None:
    contract = load_contract()
    assert [
        contract.classify_http(s) for s in (401, 403, 408, 429, 500, 502, 599, 404, 418, 302, 600)
    ] == [
        "http_401",
        "http_403",
        "http_408",
        "http_429",
        "http_5xx",
        "http_5xx",
        "http_5xx",
        "http_error",
        "http_error",
        "http_error",
        "http_error",
    ]


def test_retry_semantics() -> None:
    c = load_contract()
    assert c.spec("http_429").retryable and not c.spec("http_429").immediate_retry
    for code in (
        "request_timeout",
        "network_error",
        "http_408",
        "http_5xx",
        "non_json_response",
        "malformed_response",
    ):
        assert c.spec(code).immediate_retry, code
    for code in (
        "http_401",
        "http_403",
        "api_key_missing",
        "configuration_invalid",
        "request_aborted",
    ):
        assert not c.spec(code).retryable, code
    assert c.spec("invalid_json").repairable and not c.spec("invalid_input").repairable


def test_every_code_the_source_raises_is_in_the_manifest() -> None:
    import pathlib
    import re

    src = pathlib.Path(__file__).resolve().parents[2] / "src" / "deskpilot" / "provider"
    text = "\n".join(p.read_text() for p in src.rglob("*.py"))
    used = set(
        re.findall(r'(?:ProviderError|_Fail|ParseFailure|_invalid_code)\(\s*"([a-z_0-9]+)"', text)
    )
    used |= set(re.findall(r'code="([a-z_0-9]+)"', text))
    assert used, "pattern found nothing"
    known = set(load_contract().codes)
    assert used <= known, used - known


def test_provider_error_reads_category_from_manifest() -> None:
    err = ProviderError("http_429", "slow down", http_status=429)
    assert err.to_dict() == {
        "code": "http_429",
        "category": "rate_limit",
        "retryable": True,
        "message": "slow down",
        "httpStatus": 429,
    }


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d["codes"].pop("http_5xx"), "required code"),
        (
            lambda d: d["http"]["ranges"].insert(0, {"from": 550, "to": 560, "code": "http_5xx"}),
            "overlaps",
        ),
        (lambda d: d["http"].update(exact={"999": "http_401"}), "not an HTTP status"),
        (lambda d: d["codes"]["http_401"].update(category="nope"), "not allowed"),
        (lambda d: d.update(classificationSamples=[]), "classificationSamples"),
        (lambda d: d.update(requiredHttpStatus=[700]), "no mapping"),
    ],
)
def test_validator_rejects_known_bad_manifests(mutate, needle: str) -> None:
    bad = copy.deepcopy(read_manifest_data())
    mutate(bad)
    problems = validate_manifest(bad)
    assert any(needle in p for p in problems), problems


def test_validator_self_test_fails_when_validator_is_blind() -> None:
    assert validate_manifest("nope") == ["manifest is not a JSON object"]
    bad = copy.deepcopy(read_manifest_data())
    bad["schema"] = "x"
    assert self_test(bad)  # a bad "good" manifest is reported


def test_cli_contract_command() -> None:
    proc = subprocess.run([str(CLI), "provider", "contract"], capture_output=True, timeout=60)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {"ok": True, "problems": [], "selfTest": []}
