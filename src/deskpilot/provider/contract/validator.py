"""Validate an error manifest; the self-test proves the validator rejects known-bad manifests."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

SCHEMA = "deskpilot.provider.error-contract.v1"
_SPEC_KEYS = {"category", "retryable", "immediateRetry", "repairable", "description"}


def validate_manifest(data: Any) -> list[str]:
    """Return every problem found; an empty list means the manifest is usable."""
    problems: list[str] = []
    if not isinstance(data, dict):
        return ["manifest is not a JSON object"]
    if data.get("schema") != SCHEMA:
        problems.append(f"schema must be {SCHEMA!r}")
    categories = data.get("allowedCategories")
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        problems.append("allowedCategories must be a list of strings")
        categories = []
    elif len(set(categories)) != len(categories):
        problems.append("allowedCategories has duplicates")
    codes = data.get("codes")
    if not isinstance(codes, dict) or not codes:
        return [*problems, "codes must be a non-empty object"]
    for code, spec in codes.items():
        problems.extend(_check_spec(code, spec, categories))
    required = data.get("requiredCodes")
    if not isinstance(required, list):
        problems.append("requiredCodes must be a list")
    else:
        problems.extend(f"required code {c!r} is missing" for c in required if c not in codes)
    problems.extend(_check_http(data.get("http"), codes, data.get("requiredHttpStatus")))
    problems.extend(_check_samples(data, codes))
    return problems


def _check_spec(code: str, spec: Any, categories: list[str]) -> list[str]:
    if not isinstance(spec, dict):
        return [f"{code}: spec must be an object"]
    out: list[str] = []
    extra = set(spec) - _SPEC_KEYS
    if extra:
        out.append(f"{code}: unknown keys {sorted(extra)}")
    if spec.get("category") not in categories:
        out.append(f"{code}: category {spec.get('category')!r} is not allowed")
    for key in ("retryable", "immediateRetry"):
        if not isinstance(spec.get(key), bool):
            out.append(f"{code}: {key} must be a boolean")
    if "repairable" in spec and not isinstance(spec["repairable"], bool):
        out.append(f"{code}: repairable must be a boolean")
    if spec.get("immediateRetry") is True and spec.get("retryable") is not True:
        out.append(f"{code}: immediateRetry requires retryable")
    if spec.get("repairable") is True and spec.get("category") not in ("protocol", "turn"):
        out.append(f"{code}: only protocol/turn codes can be repairable")
    return out


def _check_http(http: Any, codes: dict[str, Any], required_status: Any) -> list[str]:
    if not isinstance(http, dict):
        return ["http must be an object"]
    out: list[str] = []
    exact = http.get("exact")
    ranges = http.get("ranges")
    if not isinstance(exact, dict):
        out.append("http.exact must be an object")
        exact = {}
    for status, code in exact.items():
        if not (str(status).isdigit() and 100 <= int(status) <= 599):
            out.append(f"http.exact key {status!r} is not an HTTP status")
        if code not in codes:
            out.append(f"http.exact {status} maps to unknown code {code!r}")
    if not isinstance(ranges, list):
        return [*out, "http.ranges must be a list"]
    previous_high = 99
    for rng in ranges:
        if not isinstance(rng, dict) or not {"from", "to", "code"} <= set(rng):
            out.append("http.ranges items need from, to and code")
            continue
        low, high = rng["from"], rng["to"]
        if not (isinstance(low, int) and isinstance(high, int) and 100 <= low <= high <= 599):
            out.append(f"http range {low}-{high} is not within 100..599 or is reversed")
            continue
        if low <= previous_high:
            out.append(f"http range {low}-{high} overlaps or is out of order")
        previous_high = high
        if rng["code"] not in codes:
            out.append(f"http range {low}-{high} maps to unknown code {rng['code']!r}")
    if isinstance(required_status, list):
        for status in required_status:
            covered = str(status) in exact or any(
                isinstance(r, dict) and r.get("from", 0) <= status <= r.get("to", -1)
                for r in ranges
            )
            if not covered:
                out.append(f"required HTTP status {status} has no mapping")
    return out


def _check_samples(data: dict[str, Any], codes: dict[str, Any]) -> list[str]:
    samples = data.get("classificationSamples")
    if not isinstance(samples, list) or not samples:
        return ["classificationSamples must be a non-empty list"]
    http = data.get("http")
    if not isinstance(http, dict):
        return []
    exact: dict[str, Any] = http["exact"] if isinstance(http.get("exact"), dict) else {}
    ranges: list[Any] = http["ranges"] if isinstance(http.get("ranges"), list) else []
    out: list[str] = []
    for sample in samples:
        status, expect = sample.get("httpStatus"), sample.get("expect")
        if expect not in codes:
            out.append(f"sample expects unknown code {expect!r}")
            continue
        got = exact.get(str(status))
        if got is None:
            got = next(
                (
                    r["code"]
                    for r in ranges
                    if isinstance(r, dict) and r.get("from", 0) <= status <= r.get("to", -1)
                ),
                "http_error",
            )
        if got != expect:
            out.append(f"sample {status}: classified {got!r}, expected {expect!r}")
    return out


Mutation = Callable[[dict[str, Any]], None]


def _known_bad() -> dict[str, Mutation]:
    def drop_required(d: dict[str, Any]) -> None:
        del d["codes"]["http_429"]

    def bad_category(d: dict[str, Any]) -> None:
        d["codes"]["http_5xx"]["category"] = "weather"

    def immediate_not_retryable(d: dict[str, Any]) -> None:
        d["codes"]["http_401"]["immediateRetry"] = True

    def retryable_not_bool(d: dict[str, Any]) -> None:
        d["codes"]["network_error"]["retryable"] = "yes"

    def ranges_out_of_order(d: dict[str, Any]) -> None:
        d["http"]["ranges"].reverse()

    def range_overlap(d: dict[str, Any]) -> None:
        d["http"]["ranges"].append({"from": 450, "to": 550, "code": "http_error"})

    def exact_unknown_code(d: dict[str, Any]) -> None:
        d["http"]["exact"]["418"] = "http_teapot"

    def sample_mismatch(d: dict[str, Any]) -> None:
        d["classificationSamples"].append({"httpStatus": 503, "expect": "http_error"})

    def wrong_schema(d: dict[str, Any]) -> None:
        d["schema"] = "something.else.v9"

    def repairable_transport(d: dict[str, Any]) -> None:
        d["codes"]["http_5xx"]["repairable"] = True

    return {
        "missing required code": drop_required,
        "unknown category": bad_category,
        "immediateRetry without retryable": immediate_not_retryable,
        "non-boolean retryable": retryable_not_bool,
        "ranges out of order": ranges_out_of_order,
        "overlapping ranges": range_overlap,
        "exact maps to unknown code": exact_unknown_code,
        "classification sample mismatch": sample_mismatch,
        "wrong schema": wrong_schema,
        "repairable transport code": repairable_transport,
    }


def self_test(good: dict[str, Any]) -> list[str]:
    """Every known-bad variant of ``good`` must be rejected; returns the failures of that rule."""
    failures: list[str] = []
    if validate_manifest(good):
        failures.append("the packaged manifest itself does not validate")
    for name, mutate in _known_bad().items():
        bad = copy.deepcopy(good)
        mutate(bad)
        if not validate_manifest(bad):
            failures.append(f"validator accepted a known-bad manifest: {name}")
    return failures
