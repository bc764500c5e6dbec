"""Interleaved A/B of two source trees: the MCP benchmark and the observe benchmark.

Why: a refactor should not make deskpilot slower, and on the shared 2-CPU VM the load moves
more between two runs taken minutes apart than most changes do. So this runs both trees in
one go, alternating (before, after, before, after … for ``--rounds`` rounds), each run a
subprocess of the tree's own unchanged ``benchmarks/mcp_bench.py`` and
``benchmarks/observe_bench.py``, each starting its own private desktop as those scripts do
(DISPLAY and the D-Bus session address are removed from their environment), with a fresh
``DESKPILOT_DATA_DIR``. It prints the median over rounds of each figure and after ÷ before.

Each tree runs from its own root (``SRC/..``) with ``ROOT/.venv/bin/python``, because the
host is spawned as ``python -I -m deskpilot.host``: ``-I`` ignores PYTHONPATH, so the host
comes from wherever that interpreter's site-packages point. A root without ``.venv`` (a
``git worktree``) gets a path-only overlay: a pyvenv.cfg, this interpreter as ``python``, a
.pth naming SRC and this venv's site-packages, the deskpilot dist-info (an editable install,
so ``DESKPILOT_HOST_LOCAL_TRUST=1`` applies) and a ``deskpilot`` script; nothing is installed.
Before measuring, each tree's ``python -I`` must import deskpilot from its SRC.

Run (from the repo root, with the development venv):
``.venv/bin/python benchmarks/ab_compare.py --before /work/before/src --after src --rounds 3``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MCP_LINE = re.compile(r"^(\w+_median_ms): ([-\d.]+)$", re.M)
SNAPSHOT = re.compile(
    r"^(?P<app>gnome-calculator|chromium 300 items)\s+nodes=.*?snapshot cold\s+(?P<cold>[\d.]+) ms"
    r"\s+warm\s+(?P<warm>[\d.]+) ms\s+\| baseline\s+(?P<base>[\d.]+) ms",
    re.M,
)
OBSERVE = re.compile(
    r"^(?P<app>gnome-calculator|chromium 300 items)\s+full observe [^:]*:\s+(?P<ms>[\d.]+) ms", re.M
)
RENDER = re.compile(
    r"all shown \(.*?\)\s+(?P<all>[\d.]+) ms\s+\| defaults \(.*?\)\s+(?P<d>[\d.]+) ms"
)
SHORT = {"gnome-calculator": "calc", "chromium 300 items": "chromium"}


@dataclass(frozen=True)
class Tree:
    label: str
    src: Path
    python: Path  # ROOT/.venv/bin/python, checked to import deskpilot from src under -I

    @property
    def root(self) -> Path:
        return self.src.parent


def _overlay_venv(venv: Path, src: Path) -> None:
    ref_site = Path(sysconfig.get_path("purelib"))
    dist_info = sorted(ref_site.glob("deskpilot-*.dist-info"))
    if sys.prefix == sys.base_prefix or not dist_info:
        raise SystemExit("run ab_compare with the development venv's python (deskpilot installed)")
    site = venv / ref_site.relative_to(sys.prefix)
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "bin" / "python").symlink_to(sys.executable)
    (site / "_ab_0_tree.pth").write_text(f"{src}\n")
    (site / "_ab_1_deps.pth").write_text(f"{ref_site}\n")  # a path line: its .pth are not run
    (site / dist_info[-1].name).symlink_to(dist_info[-1], target_is_directory=True)
    script = (Path(sys.prefix) / "bin" / "deskpilot").read_text().split("\n", 1)[1]
    (venv / "bin" / "deskpilot").write_text(f"#!{venv / 'bin' / 'python'}\n{script}")
    (venv / "bin" / "deskpilot").chmod(0o755)


def prepare(label: str, src: Path) -> Tree:
    venv = src.parent / ".venv"
    if not (venv / "bin" / "python").exists():
        _overlay_venv(venv, src)
    python = venv / "bin" / "python"
    probe = [str(python), "-I", "-c", "import deskpilot; print(deskpilot.__file__)"]
    where = Path(subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip())
    if not where.is_relative_to(src):
        raise SystemExit(f"{label}: {python} -I imports {where}, not {src}")
    print(f"# {label}: {src} ({python}; python -I imports {where})", flush=True)
    return Tree(label, src, python)


def parse_mcp(out: str) -> dict[str, float]:
    return {f"mcp {k.removesuffix('_median_ms')}": float(v) for k, v in MCP_LINE.findall(out)}


def parse_observe(out: str) -> dict[str, float]:
    got: dict[str, float] = {}
    for m in SNAPSHOT.finditer(out):
        app = SHORT[m["app"]]
        got[f"observe {app} snapshot cold"] = float(m["cold"])
        got[f"observe {app} snapshot warm"] = float(m["warm"])
        got[f"observe {app} baseline walker"] = float(m["base"])
    for m in OBSERVE.finditer(out):
        got[f"observe {SHORT[m['app']]} full observe"] = float(m["ms"])
    if r := RENDER.search(out):
        got["observe render 100k all shown"] = float(r["all"])
        got["observe render 100k defaults"] = float(r["d"])
    return got


def run_bench(tree: Tree, script: str, args: list[str], log: Path, timeout: float) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    data = tempfile.mkdtemp(prefix="deskpilot-ab-data-")
    env.update(PYTHONPATH=str(tree.src), DESKPILOT_HOST_LOCAL_TRUST="1", DESKPILOT_DATA_DIR=data)
    argv = [str(tree.python), str(tree.root / "benchmarks" / script), *args]
    try:
        proc = subprocess.run(
            argv, cwd=tree.root, env=env, capture_output=True, text=True, timeout=timeout
        )
    finally:
        shutil.rmtree(data, ignore_errors=True)
    log.write_text(f"$ {shlex.join(argv)}\n{proc.stdout}\n--- stderr ---\n{proc.stderr}")
    if proc.returncode != 0:
        print(f"  {script} for {tree.label} exited {proc.returncode}; see {log}", flush=True)
    return proc.stdout


def _cell(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]"


def table(results: dict[str, dict[str, list[float]]], before: str, after: str) -> str:
    keys = sorted({k for per in results.values() for k in per})
    rows = [
        "| measure (ms) | before: median [min–max] | after: median [min–max] | after ÷ before |",
        "|---|---|---|---|",
    ]
    for k in keys:
        b, a = results[before].get(k, []), results[after].get(k, [])
        ratio = f"{statistics.median(a) / statistics.median(b):.3f}" if a and b else "—"
        rows.append(f"| {k} | {_cell(b)} | {_cell(a)} | {ratio} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description="Interleaved A/B of two source trees.")
    ap.add_argument("--before", type=Path, required=True, help="the before tree's src/")
    ap.add_argument("--after", type=Path, required=True, help="the after tree's src/")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mcp-args", default="--n 30 --baseline-n 3")
    ap.add_argument("--observe-args", default="--runs 11")
    ap.add_argument("--only", choices=("mcp", "observe"))
    ap.add_argument("--log-dir", type=Path, help="raw outputs (default: a new temp dir)")
    ap.add_argument("--json", type=Path, help="also write every run's figures here")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per benchmark run")
    ns = ap.parse_args()
    trees = [prepare("before", ns.before.resolve()), prepare("after", ns.after.resolve())]
    logs = ns.log_dir or Path(tempfile.mkdtemp(prefix="deskpilot-ab-"))
    logs.mkdir(parents=True, exist_ok=True)
    benches = [
        ("mcp", "mcp_bench.py", shlex.split(ns.mcp_args), parse_mcp),
        ("observe", "observe_bench.py", shlex.split(ns.observe_args), parse_observe),
    ]
    results: dict[str, dict[str, list[float]]] = {t.label: {} for t in trees}
    runs: list[dict[str, object]] = []
    started = time.monotonic()
    for rnd in range(1, ns.rounds + 1):
        for name, script, args, parse in benches:
            if ns.only and name != ns.only:
                continue
            for tree in trees:
                load, t0 = os.getloadavg()[0], time.monotonic()
                log = logs / f"{rnd}-{name}-{tree.label}.txt"
                figures = parse(run_bench(tree, script, args, log, ns.timeout))
                secs = time.monotonic() - t0
                for k, v in figures.items():
                    results[tree.label].setdefault(k, []).append(v)
                runs.append(
                    {
                        "round": rnd,
                        "bench": name,
                        "tree": tree.label,
                        "load1": load,
                        "seconds": secs,
                        "figures": figures,
                    }
                )
                print(
                    f"round {rnd} {name:<7} {tree.label:<6} {secs:6.1f} s  load {load:.2f}  "
                    f"{len(figures)} figures",
                    flush=True,
                )
    print(f"\n{ns.rounds} rounds in {time.monotonic() - started:.0f} s; raw outputs in {logs}")
    print(f"before = {trees[0].src}\nafter  = {trees[1].src}\n")
    print(table(results, "before", "after"))
    if ns.json:
        ns.json.write_text(json.dumps({"argv": sys.argv, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
