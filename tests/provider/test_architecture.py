"""The provider's internal import contract, checked from the source itself.

Sub-layers (a module imports only its own sub-package or lower layers):

    orchestrator | diagnostics  >  turn  >  protocol  >  tools | transport
        >  config | telemetry | continuation | vision_intent  >  contract

plus: no import cycles, nothing of the desktop, no imports of the package facade from inside,
and the orchestrator stays thin (line cap). The same layering is an import-linter contract
(``provider-internal`` in pyproject.toml), run here too.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "deskpilot" / "provider"
PKG = "deskpilot.provider"
LAYERS: list[tuple[str, ...]] = [
    ("orchestrator", "diagnostics"),
    ("turn",),
    ("protocol",),
    ("tools", "transport"),
    ("config", "telemetry", "continuation", "vision_intent"),
    ("contract",),
]
ORCHESTRATOR_MAX_LINES = 220
FORBIDDEN = (
    "deskpilot.host",
    "deskpilot.hostclient",
    "deskpilot.desktop",
    "deskpilot.vault",
    "deskpilot.store",
    "deskpilot.kernel",
    "deskpilot.agent",
    "deskpilot.runtime",
    "deskpilot.cli",
    "deskpilot.mcp",
    "deskpilot.web",
)


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PKG, *parts]) if parts else PKG


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    name = module_name(path)
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def graph() -> dict[str, set[str]]:
    """Edges between provider modules (an import of a package counts as its __init__)."""
    edges: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        edges[name] = {t for t in imports_of(path) if t in MODULES and t != name}
    return edges


def layer_of(module: str) -> tuple[int, str] | None:
    if module == PKG:
        return None
    top = module[len(PKG) + 1 :].split(".")[0]
    for index, names in enumerate(LAYERS):
        if top in names:
            return index, top
    raise AssertionError(f"{module} belongs to no sub-layer; add it to LAYERS")


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        layer_of(name)


def test_sub_layer_directions() -> None:
    bad = []
    for src, targets in graph().items():
        src_layer = layer_of(src)
        if src_layer is None:
            continue  # the facade may import anything below it
        for dst in targets:
            if dst == PKG:
                bad.append(f"{src} imports the package facade")
                continue
            dst_layer = layer_of(dst)
            assert dst_layer is not None
            same_subpackage = src_layer[1] == dst_layer[1]
            if not same_subpackage and dst_layer[0] <= src_layer[0]:
                bad.append(f"{src} -> {dst}")
    assert bad == []


def test_no_import_cycles() -> None:
    edges = graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in edges:
        if node not in state:
            visit(node)
    # a package __init__ re-exporting its own submodules is not a cycle worth failing on
    real = [c for c in cycles if not all(m == c[0] or m.startswith(c[0] + ".") for m in c)]
    assert real == []


def test_provider_knows_nothing_of_the_desktop() -> None:
    offenders = {
        f"{name} -> {target}"
        for name, path in MODULES.items()
        for target in imports_of(path)
        if target.startswith(FORBIDDEN)
    }
    assert offenders == set()


def test_orchestrator_stays_thin() -> None:
    lines = (SRC / "orchestrator.py").read_text("utf-8").count("\n")
    assert lines <= ORCHESTRATOR_MAX_LINES, f"orchestrator.py has {lines} lines"


def test_one_module_owns_continuation_rules() -> None:
    owners = [
        name
        for name, path in MODULES.items()
        if "继续" in path.read_text("utf-8") and name != f"{PKG}.continuation"
    ]
    # final_policy may list acknowledgements, but continuation phrases are defined once
    assert owners == [f"{PKG}.turn.final_policy"] or owners == []
    assert "def is_continuation" in (SRC / "continuation.py").read_text("utf-8")
    for name, path in MODULES.items():
        if name != f"{PKG}.continuation":
            assert "def is_continuation" not in path.read_text("utf-8"), name


@pytest.mark.parametrize(
    "needle", ["xtalpi", "pi-67", "pi67", "pi_tool", "deepseek", "晶泰", "Spark Work"]
)
def test_no_seed_product_names(needle: str) -> None:
    paths = [*SRC.rglob("*"), REPO / "src" / "deskpilot" / "cli" / "provider.py"]
    docs = REPO / "docs" / "provider.md"
    if docs.exists():
        paths.append(docs)
    for path in paths:
        if path.is_file() and path.suffix in (".py", ".json", ".md"):
            assert needle.lower() not in path.read_text("utf-8").lower(), path


def test_import_linter_contract() -> None:
    linter = REPO / ".venv" / "bin" / "lint-imports"
    proc = subprocess.run(
        [str(linter), "--contract", "provider-internal"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 kept, 0 broken" in proc.stdout
