"""The environment an app needs for its accessibility tree (desktop/a11y_env.py): GTK 2 loads
its bridge only by ``GTK_MODULES``, and ``deskpilot doctor`` names the Debian package that
is missing, or what a person's session lacks. Real files in a scratch library directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from deskpilot.desktop.a11y_env import GTK2_LIBRARY, gtk2_bridge, gtk_modules, with_accessibility


def test_gtk_modules_adds_the_bridge_after_what_the_session_names() -> None:
    assert gtk_modules(None) == "gail:atk-bridge"
    assert gtk_modules("") == "gail:atk-bridge"
    assert gtk_modules("canberra-gtk-module") == "canberra-gtk-module:gail:atk-bridge"
    assert gtk_modules("atk-bridge:gail") == "atk-bridge:gail"  # nothing named twice


def test_every_app_started_gets_the_bridge_and_keeps_its_environment() -> None:
    env = with_accessibility({"PATH": "/usr/bin", "GTK_MODULES": "foo", "NO_AT_BRIDGE": "1"})
    assert env["PATH"] == "/usr/bin"
    assert env["GTK_MODULES"] == "foo:gail:atk-bridge"
    assert env["NO_AT_BRIDGE"] == "0" and env["GTK_A11Y"] == "atspi"
    assert env["ACCESSIBILITY_ENABLED"] == "1"


def _lib(tmp_path: Path, *modules: str) -> str:
    lib = tmp_path / "x86_64-linux-gnu"
    (lib / "gtk-2.0" / "modules").mkdir(parents=True)
    (lib / GTK2_LIBRARY).write_bytes(b"")
    for module in modules:
        (lib / "gtk-2.0" / "modules" / module).write_bytes(b"")
    return str(tmp_path / "*-linux-gnu")


@pytest.mark.parametrize(
    ("modules", "missing"),
    [
        (("libatk-bridge.so",), ("libgail-common",)),
        (("libgail.so",), ("libatk-adaptor",)),
        ((), ("libgail-common", "libatk-adaptor")),
    ],
)
def test_a_missing_gtk2_module_is_named_by_its_debian_package(
    tmp_path: Path, modules: tuple[str, ...], missing: tuple[str, ...]
) -> None:
    found = gtk2_bridge({"GTK_MODULES": "gail:atk-bridge"}, [_lib(tmp_path, *modules)])
    assert found.state == "missing_packages"
    assert found.missing == missing
    assert f"apt-get install {' '.join(missing)}" in found.advice


def test_a_session_without_the_modules_is_told_what_it_needs(tmp_path: Path) -> None:
    lib = _lib(tmp_path, "libgail.so", "libatk-bridge.so")
    lacking = gtk2_bridge({"GTK_MODULES": "gail"}, [lib])
    assert lacking.state == "session_lacks_modules"
    assert "GTK_MODULES=gail:atk-bridge" in lacking.advice
    assert "/etc/X11/Xsession.d/90atk-adaptor" in lacking.advice
    assert gtk2_bridge({"GTK_MODULES": "foo:gail:atk-bridge"}, [lib]).state == "ok"


def test_no_gtk2_needs_nothing(tmp_path: Path) -> None:
    assert gtk2_bridge({}, [str(tmp_path)]).state == "no_gtk2"
