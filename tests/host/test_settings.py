"""The host's DESKPILOT_* settings: each read in one place, a bad value refused by name."""

from __future__ import annotations

import math

import pytest

from deskpilot.host import settings
from deskpilot.host import trust as host_trust
from deskpilot.protocol import host_exits
from deskpilot.protocol.wire import MAX_TREE_DEADLINE_MS

DEADLINE = settings.TREE_DEADLINE_ENV


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("", settings.TREE_DEADLINE_S),
        ("   ", settings.TREE_DEADLINE_S),
        ("1500", 1.5),
        (" 700 ", 0.7),
        ("1", 0.001),
        ("2500.5", 2.5005),
        (str(MAX_TREE_DEADLINE_MS), MAX_TREE_DEADLINE_MS / 1000),
        # above the cap: the cap (never above the request timeout), said in the host log
        ("5001", MAX_TREE_DEADLINE_MS / 1000),
        ("1e9", MAX_TREE_DEADLINE_MS / 1000),
    ],
)
def test_a_usable_tree_deadline_is_read_in_seconds(raw: str, seconds: float) -> None:
    assert math.isclose(settings.tree_deadline_s({DEADLINE: raw}), seconds)


@pytest.mark.parametrize("raw", ["abc", "1.5s", "1,500", "0", "-200", "0.5", "nan", "inf", "-inf"])
def test_an_unusable_tree_deadline_is_refused_by_name(raw: str) -> None:
    with pytest.raises(settings.SettingError) as info:
        settings.tree_deadline_s({DEADLINE: raw})
    said = str(info.value)
    assert said.startswith(f"{DEADLINE}={raw!r} cannot be used")
    assert "a number of milliseconds of at least 1" in said


def test_a_deadline_above_the_cap_is_said_once_at_start() -> None:
    assert settings.notices({}) == []
    assert settings.notices({DEADLINE: "1500"}) == []
    assert settings.notices({DEADLINE: "soon"}) == []  # a refusal, not a notice
    (said,) = settings.notices({DEADLINE: " 9000 "})
    assert said.startswith(f"{DEADLINE}='9000' is above the cap: tree reads use 5,000 ms")


def test_the_tree_cache_switch_and_the_log_level() -> None:
    cache, level = settings.TREE_CACHE_ENV, settings.LOG_LEVEL_ENV
    assert settings.tree_cache_on({}) is True
    assert settings.tree_cache_on({cache: "1"}) is True
    assert settings.tree_cache_on({cache: "OFF"}) is False
    assert settings.tree_cache_on({cache: "0"}) is False
    with pytest.raises(settings.SettingError, match="DESKPILOT_TREE_CACHE='maybe'"):
        settings.tree_cache_on({cache: "maybe"})
    assert settings.log_level({}) == "WARNING"
    assert settings.log_level({level: "debug"}) == "DEBUG"
    with pytest.raises(settings.SettingError, match="one of DEBUG, INFO"):
        settings.log_level({level: "verbose"})


def test_every_bad_setting_is_reported_at_once_and_a_long_value_is_cut() -> None:
    env = {DEADLINE: "x" * 500, settings.LOG_LEVEL_ENV: "loud", settings.TREE_CACHE_ENV: "1"}
    found = settings.problems(env)
    assert len(found) == 2
    assert found[0].startswith(f"{DEADLINE}='{'x' * 40}…'")
    assert len(found[0]) < 200
    assert found[1].startswith("DESKPILOT_HOST_LOG_LEVEL='loud'")
    assert settings.problems({}) == []


def test_the_exit_status_written_out_before_the_protocol_loads_agrees() -> None:
    assert host_trust.EXIT_AUTH_FAILURE == host_exits.EXIT_AUTH_FAILURE
