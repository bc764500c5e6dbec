"""The vision endpoint's settings: configured only with base URL and model; the key hidden."""

from __future__ import annotations

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision import VisionConfig

KEY = "sk-vision-0123456789"


def test_unset_means_not_configured() -> None:
    assert VisionConfig.from_env({}) is None
    assert VisionConfig.from_env({"DESKPILOT_VISION_BASE_URL": "http://127.0.0.1:9/v1"}) is None
    assert VisionConfig.from_env({"DESKPILOT_VISION_MODEL": "m"}) is None


def test_configured_with_key_and_timeout_which_repr_hides() -> None:
    config = VisionConfig.from_env(
        {
            "DESKPILOT_VISION_BASE_URL": "https://vision.example.test/v1/",
            "DESKPILOT_VISION_MODEL": "vl-large",
            "DESKPILOT_VISION_API_KEY": KEY,
            "DESKPILOT_VISION_TIMEOUT_S": "12.5",
        }
    )
    assert config is not None
    assert config.model == "vl-large" and config.api_key == KEY and config.timeout_s == 12.5
    assert config.chat_completions_url == "https://vision.example.test/v1/chat/completions"
    assert KEY not in repr(config) and KEY not in str(config)


def test_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKPILOT_VISION_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("DESKPILOT_VISION_MODEL", "local-vl")
    monkeypatch.delenv("DESKPILOT_VISION_API_KEY", raising=False)
    config = VisionConfig.from_env()
    assert config is not None and config.model == "local-vl" and config.api_key is None


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"DESKPILOT_VISION_TIMEOUT_S": "soon"}, "DESKPILOT_VISION_TIMEOUT_S"),
        ({"DESKPILOT_VISION_TIMEOUT_S": "0"}, "DESKPILOT_VISION_TIMEOUT_S"),
        ({"DESKPILOT_VISION_TIMEOUT_S": "nan"}, "DESKPILOT_VISION_TIMEOUT_S"),
        ({"DESKPILOT_VISION_BASE_URL": "ftp://host/v1"}, "DESKPILOT_VISION_BASE_URL"),
    ],
)
def test_malformed_settings_are_typed_errors_without_the_key(
    extra: dict[str, str], needle: str
) -> None:
    env = {
        "DESKPILOT_VISION_BASE_URL": "http://127.0.0.1:8000/v1",
        "DESKPILOT_VISION_MODEL": "m",
        "DESKPILOT_VISION_API_KEY": KEY,
        **extra,
    }
    with pytest.raises(DeskpilotError) as caught:
        VisionConfig.from_env(env)
    assert caught.value.code is ErrorCode.VISION_UNAVAILABLE
    assert needle in caught.value.message
    assert KEY not in caught.value.message and KEY not in repr(caught.value)
