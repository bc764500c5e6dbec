"""Raters for the arguments of programs whose risk depends on them.

Each ``rate_<program>(args, scan, fed)`` reads one program's options and operands and tells
the scan what it reads, writes or runs: the writers (cp, mv, rm, chmod, tee, rsync …), sort,
uniq, date, the package tools, sed (its ``e``/``w``/``r`` commands, ``-i``) and git (by
subcommand, ``-c``, ``-C``, destructive and network forms). ``fed``: xargs adds arguments
from its input, so their paths are unknown. The dispatch that picks a rater, and the
wrappers that run another command (env, nohup, xargs, find -exec), are in ``shell_commands``.
"""

from __future__ import annotations

import re

from deskpilot.kernel.policy.shell_parse import after_eq, has_short, options, unmask
from deskpilot.kernel.policy.shell_scan import Scan
from deskpilot.kernel.policy.shell_tables import (
    GIT_LISTING,
    GIT_NETWORK,
    GIT_READ,
    GIT_WRITE,
    PACKAGE_QUERIES,
    WRITE_LAST,
    WRITER_VALUES,
)
from deskpilot.protocol.session import RiskLevel

_CHMOD_MODE_OPTION = re.compile(r"^-[rwxXst]+$")


def rate_writer(name: str, args: list[str], scan: Scan, fed: bool) -> None:
    opts, pos, values = options(args, frozenset(WRITER_VALUES.get(name, ())))
    if name == "rsync" and (
        "-e" in opts
        or "--rsh" in opts
        or any(re.match(r"^[^/]*::|^[^/]+:|^rsync://", unmask(p)) for p in pos)
    ):
        scan.add(RiskLevel.L3, "network_tool")
    if name in ("chmod", "chown", "chgrp"):
        if has_short([o for o in opts if not _CHMOD_MODE_OPTION.match(o)], "R") or (
            "--recursive" in opts
        ):
            scan.add(RiskLevel.L3, "recursive_permission_change")
        mode_as_option = name == "chmod" and any(_CHMOD_MODE_OPTION.match(o) for o in opts)
        if pos and not mode_as_option and not any(o.startswith("--reference") for o in opts):
            pos = pos[1:]  # the mode / owner
    target = None if name == "touch" else values.get("-t") or values.get("--target-directory")
    if name in WRITE_LAST:
        if target is None and len(pos) > 1:
            target, pos = pos[-1], pos[:-1]
        for w in pos:
            scan.read(w)
        if target is not None:
            scan.write(target)
        elif fed:
            scan.add(RiskLevel.L3, "write_outside_cwd")
    else:
        for w in pos:
            scan.write(w)
        if fed:
            scan.add(RiskLevel.L3, "write_outside_cwd")
    _generic_outputs(args, scan)


def _generic_outputs(args: list[str], scan: Scan) -> None:
    for w in args:
        v = unmask(w)
        if re.match(r"^--(output|output-file|outfile|log-file)=", v):
            scan.write(after_eq(w))


def rate_rm(args: list[str], scan: Scan, fed: bool) -> None:
    opts, _, _ = options(args)
    if has_short(opts, "r") or has_short(opts, "R") or "--recursive" in opts:
        scan.add(RiskLevel.L3, "recursive_delete")
    rate_writer("rm", args, scan, fed)


def rate_sort(args: list[str], scan: Scan, fed: bool) -> None:
    opts, pos, values = options(args, frozenset({"-o", "-k", "-t", "-S", "-T", "--output"}))
    out = values.get("-o") or values.get("--output")
    if out is not None:
        scan.write(out)
    if any(o.startswith("--compress-program") for o in opts):
        scan.add(RiskLevel.L3, "runs_hidden_command")
    for w in pos:
        scan.read(w)


def rate_uniq(args: list[str], scan: Scan, fed: bool) -> None:
    _, pos, _ = options(args, frozenset({"-f", "-s", "-w"}))
    if pos:
        scan.read(pos[0])
    if len(pos) > 1:
        scan.write(pos[1])


def rate_date(args: list[str], scan: Scan, fed: bool) -> None:
    if any(unmask(a) in ("-s", "--set") or unmask(a).startswith("--set=") for a in args):
        scan.add(RiskLevel.L3, "system_control")


def rate_package(args: list[str], scan: Scan, fed: bool) -> None:
    _, pos, _ = options(args)
    first = unmask(pos[0]) if pos else (unmask(args[0]) if args else "")
    if first not in PACKAGE_QUERIES:
        scan.add(RiskLevel.L3, "package_manager")


_SED_SUBST = re.compile(r"s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1([A-Za-z0-9]*)")
_SED_ADDRESS = re.compile(
    r"/(?:\\.|[^/])*/|\\(.)(?:\\.|(?!\1).)*\1|y(.)(?:\\.|(?!\2).)*\2(?:\\.|(?!\2).)*\2"
)
_SED_COMMAND = re.compile(r"(?:^|[;\n{}!\s0-9$,])[ewWrR]")


def _sed_runs_or_writes(script: str) -> bool:
    """GNU sed's ``e`` (run a command), ``w``/``W`` (write a file) and ``r``/``R`` (read
    one), as commands or as substitution flags; over-reports, never under-reports."""
    if any(c in "ew" for m in _SED_SUBST.finditer(script) for c in m.group(2)):
        return True
    rest = _SED_ADDRESS.sub(" ", _SED_SUBST.sub(" ", script))
    return bool(_SED_COMMAND.search(rest))


def rate_sed(args: list[str], scan: Scan, fed: bool) -> None:
    opts, pos, values = options(
        args, frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})
    )
    scripts = [unmask(args[i + 1]) for i, a in enumerate(args[:-1]) if unmask(a) == "-e"]
    scripts += [values[k] for k in ("--expression",) if k in values]
    script_file = values.get("-f") or values.get("--file")
    if script_file is not None:
        scan.read(script_file)
        scan.add(RiskLevel.L3, "runs_hidden_command")
    if not scripts and script_file is None and pos:
        scripts, pos = [unmask(pos[0])], pos[1:]
    if any(_sed_runs_or_writes(s) for s in scripts):
        scan.add(RiskLevel.L3, "runs_hidden_command")
    in_place = "--in-place" in opts or any(
        o.startswith("-") and not o.startswith("--") and "i" in o[1:] for o in opts
    )
    for w in pos:
        scan.write(w) if in_place else scan.read(w)
    if fed:
        scan.add(RiskLevel.L3 if in_place else RiskLevel.L2,
                 "write_outside_cwd" if in_place else "reads_outside_cwd")  # fmt: skip


def rate_git(args: list[str], scan: Scan, fed: bool) -> None:
    repo = "."
    i = 0
    while i < len(args) and unmask(args[i]).startswith("-"):
        w = unmask(args[i])
        if w == "-C" and i + 1 < len(args):
            repo = args[i + 1]
            i += 2
            continue
        if w == "-c" or w.startswith(("--exec-path", "--config-env")):
            scan.add(RiskLevel.L3, "runs_hidden_command")
            i += 2 if w in ("-c", "--config-env") else 1
            continue
        if w.startswith(("--git-dir=", "--work-tree=")):
            repo = w.split("=", 1)[1]
        i += 1
    if i >= len(args):
        return
    sub, rest = unmask(args[i]), args[i + 1 :]
    vals = [unmask(a) for a in rest]
    opts, pos, _ = options(rest)
    first = unmask(pos[0]) if pos else ""
    destructive = (
        (sub == "push" and (
            any(v in ("-f", "--force", "--mirror", "--delete", "-d") or
                v.startswith("--force-with-lease") for v in vals)
            or any(v.startswith(("+", ":")) for v in vals)
        ))
        or (sub == "reset" and any(v in ("--hard", "--merge", "--keep") for v in vals))
        or sub in ("clean", "filter-branch", "filter-repo")
        or (sub == "branch" and ("-D" in vals or ("-d" in vals and "--force" in vals)))
        or (sub == "checkout" and any(v in ("-f", "--force") for v in vals))
        or (sub == "stash" and first in ("drop", "clear"))
        or (sub == "reflog" and first in ("expire", "delete"))
        or (sub == "update-ref" and "-d" in vals)
    )  # fmt: skip
    if destructive:
        scan.add(RiskLevel.L3, "git_destructive")
    if sub in GIT_NETWORK or (sub == "remote" and first in ("update", "prune", "show")):
        scan.add(RiskLevel.L3, "network_tool")
    if sub == "config":
        reads = {"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin"}
        if reads & set(opts) or len(pos) <= 1:
            scan.read(repo)
        else:
            scan.add(RiskLevel.L3, "runs_hidden_command")
        return
    listing = sub in ("branch", "tag", "stash", "remote", "worktree", "reflog") and (
        not pos or first in GIT_LISTING
    )
    if sub in GIT_READ or listing:
        scan.read(repo, recursive=sub == "grep")
    elif sub in GIT_WRITE or sub in ("clone", "pull", "submodule", "update-ref"):
        scan.write(repo)
    elif sub not in GIT_NETWORK:
        scan.add(RiskLevel.L3, "unknown_program")
    _generic_outputs(rest, scan)
