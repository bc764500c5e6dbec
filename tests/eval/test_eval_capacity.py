"""How many desktops a machine holds: refused beyond its cores or its memory, with the why."""

from __future__ import annotations

from pathlib import Path

import pytest

from deskpilot.eval.capacity import (
    DESKTOP_MB,
    DESKTOPS_PER_CORE,
    RESERVE_MB,
    CapacityError,
    Machine,
    desktop_rss_mb,
    mem_available_mb,
)


def test_cores_bound_the_desktops() -> None:
    m = Machine(cores=2, mem_available_mb=64_000)
    m.check(2 * DESKTOPS_PER_CORE)
    with pytest.raises(CapacityError) as info:
        m.check(2 * DESKTOPS_PER_CORE + 1)
    assert "2 core(s)" in str(info.value) and f"at most {2 * DESKTOPS_PER_CORE}" in str(info.value)


def test_memory_bounds_the_desktops() -> None:
    fits = RESERVE_MB + 2 * DESKTOP_MB
    m = Machine(cores=16, mem_available_mb=fits)
    m.check(2)
    assert m.most() == 2
    with pytest.raises(CapacityError) as info:
        m.check(3)
    said = str(info.value)
    assert f"{3 * DESKTOP_MB} MiB" in said and f"only {fits} MiB is available" in said
    assert "at most 2" in said
    with pytest.raises(CapacityError, match="at least 1"):
        m.check(0)


def test_mem_available_is_read_from_meminfo(tmp_path: Path) -> None:
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:  24000000 kB\nMemFree: 100 kB\nMemAvailable:  2097152 kB\n")
    assert mem_available_mb(info) == 2048
    info.write_text("garbage\n")
    assert mem_available_mb(info) == 0
    assert mem_available_mb() > 0  # this machine's


def test_a_display_nobody_runs_on_holds_no_memory() -> None:
    assert desktop_rss_mb(":99999") == 0.0
