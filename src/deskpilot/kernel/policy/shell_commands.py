"""Rate one simple command: its redirections, its program, and what the program wraps.

:func:`rate_simple` / :func:`rate_words` find the program (after ``NAME=value`` words, and
only a system program: not from a variable, a glob or a path outside the standard bin
dirs), unwrap the words that run another command (``env``, ``nohup``/``timeout``/``nice``
…, ``command``, ``xargs``, ``find -exec``), follow ``cd``, hand programs with telling
arguments to their rater in ``shell_programs`` and rate the rest by the tables.
"""

from __future__ import annotations

import os
import re

from deskpilot.kernel.policy.launch_rules import PRIVILEGE_TOOLS, STANDARD_BIN_DIRS, restricted_kind
from deskpilot.kernel.policy.shell_parse import (
    DESCRIPTOR_DUP,
    GLOB_CHARS,
    WRITE_REDIRECTS,
    Simple,
    has_short,
    options,
    unmask,
)
from deskpilot.kernel.policy.shell_programs import (
    rate_date,
    rate_git,
    rate_package,
    rate_rm,
    rate_sed,
    rate_sort,
    rate_uniq,
    rate_writer,
)
from deskpilot.kernel.policy.shell_scan import Scan
from deskpilot.kernel.policy.shell_tables import (
    COMPOUND,
    DESKTOP_INPUT,
    DESTRUCTIVE_TOOLS,
    DETACH_TOOLS,
    ENV_NAME,
    EVALUATORS,
    NETWORK_TOOLS,
    NO_PATH_ARGS,
    PACKAGE_TOOLS,
    PREFIXES,
    READ_ONLY,
    RISKY_ENV,
    SIGNAL_TOOLS,
    SYSTEM_CONTROL,
    WRITE_ALL,
    WRITE_LAST,
)
from deskpilot.protocol.session import RiskLevel


def _program(word: str, scan: Scan) -> str | None:
    """The program's name, or None when it cannot be trusted to be the system's."""
    value = unmask(word)
    if "$" in word or any(c in GLOB_CHARS for c in word) or not value:
        return None
    if "/" in value:
        path = os.path.join(scan.base or "/", os.path.expanduser(value))
        if os.path.dirname(os.path.normpath(path)) not in STANDARD_BIN_DIRS:
            return None
        return os.path.basename(path)
    return value


def rate_simple(simple: Simple, scan: Scan) -> None:
    for op, target in simple.redirects:
        if op in ("<<", "<<-"):
            scan.add(RiskLevel.L3, "heredoc")
        elif op == "<":
            scan.read(target)
        elif op in WRITE_REDIRECTS or (op == ">&" and not DESCRIPTOR_DUP.fullmatch(unmask(target))):
            scan.write(target)
    rate_words(simple.words, scan)


def rate_words(words: list[str], scan: Scan, *, fed: bool = False) -> None:
    """One simple command (``fed``: xargs adds arguments from its input)."""
    while words and ENV_NAME.match(words[0]):
        name = ENV_NAME.match(words[0]).group(1)  # type: ignore[union-attr]
        if RISKY_ENV.match(name):
            scan.add(RiskLevel.L3, "environment_override")
        words = words[1:]
    if not words:
        return
    name = _program(words[0], scan)
    args = words[1:]
    if name is None:
        scan.add(RiskLevel.L3, "unknown_program")
        return
    if name in COMPOUND:
        scan.add(RiskLevel.L3, "unparsed")
        return
    if name in PREFIXES or name == "command":
        _rate_prefixed(name, args, scan, fed)
        return
    if name == "env":
        _rate_env(args, scan, fed)
        return
    if name == "xargs":
        _rate_xargs(args, scan)
        return
    if name in ("cd", "pushd", "popd"):
        _rate_cd(name, args, scan)
        return
    if name in ("find", "git", "sed", "rm", "sort", "uniq", "date", *PACKAGE_TOOLS):
        {
            "find": _rate_find,
            "git": rate_git,
            "sed": rate_sed,
            "rm": rate_rm,
            "sort": rate_sort,
            "uniq": rate_uniq,
            "date": rate_date,
        }.get(name, rate_package)(args, scan, fed)
        return
    kind = restricted_kind(name.lower())
    if name in EVALUATORS:
        scan.add(RiskLevel.L3, "shell_evaluation")
    elif name in PRIVILEGE_TOOLS:
        scan.add(RiskLevel.L3, "privilege_tool")
    elif kind == "shell" or name == "watch":
        scan.add(RiskLevel.L3, "nested_shell")
    elif kind == "interpreter":
        scan.add(RiskLevel.L3, "interpreter")
    elif name in NETWORK_TOOLS:
        scan.add(RiskLevel.L3, "network_tool")
    elif name in DESTRUCTIVE_TOOLS or name.startswith("mkfs"):
        scan.add(RiskLevel.L3, "destructive_tool")
    elif name in SYSTEM_CONTROL:
        scan.add(RiskLevel.L3, "system_control")
    elif name in SIGNAL_TOOLS:
        scan.add(RiskLevel.L3, "process_signal")
    elif name in DETACH_TOOLS:
        scan.add(RiskLevel.L3, "detaches_process")
    elif name in DESKTOP_INPUT:
        scan.add(RiskLevel.L3, "desktop_input")
    elif name in WRITE_ALL or name in WRITE_LAST:
        rate_writer(name, args, scan, fed)
    elif name in READ_ONLY:
        recursive = name in ("rg", "tree", "du") or (
            name in ("grep", "egrep", "fgrep", "ls")
            and (has_short(args, "r") or has_short(args, "R") or "--recursive" in args)
        )
        _, pos, _ = options(args)
        for w in pos:
            scan.read(w, recursive=recursive)
        if fed:
            scan.add(RiskLevel.L2, "reads_outside_cwd")
    elif name in NO_PATH_ARGS:
        if name in ("export", "declare", "typeset", "readonly", "local"):
            for w in args:
                m = ENV_NAME.match(w)
                if m and RISKY_ENV.match(m.group(1)):
                    scan.add(RiskLevel.L3, "environment_override")
    else:
        scan.add(RiskLevel.L3, "unknown_program")


def _rate_prefixed(name: str, args: list[str], scan: Scan, fed: bool) -> None:
    i = 0
    if name == "command":
        if any(unmask(a) in ("-v", "-V") for a in args[:2]):
            return
        i = 1 if args and unmask(args[0]) == "-p" else 0
    elif name == "nice":
        if args and unmask(args[0]) == "-n":
            i = 2
        elif args and re.fullmatch(r"-[0-9]+|--adjustment=.*", unmask(args[0])):
            i = 1
    elif name == "timeout":
        while i < len(args) and unmask(args[i]).startswith("-"):
            i += 2 if unmask(args[i]) in ("-s", "-k") else 1
        i += 1  # the duration
    elif name in ("ionice", "stdbuf", "time"):
        while i < len(args) and unmask(args[i]).startswith("-"):
            takes = name == "ionice" and unmask(args[i]) in ("-c", "-n", "-p", "-P", "-u")
            takes = takes or (name == "stdbuf" and unmask(args[i]) in ("-i", "-o", "-e"))
            i += 2 if takes else 1
    rate_words(args[i:], scan, fed=fed)


def _rate_env(args: list[str], scan: Scan, fed: bool) -> None:
    i = 0
    base = scan.base
    while i < len(args):
        w = unmask(args[i])
        if w in ("-S", "--split-string") or w.startswith(("-S", "--split-string=")):
            scan.add(RiskLevel.L3, "shell_evaluation")
            return
        if w in ("-C", "--chdir") and i + 1 < len(args):
            scan.read(args[i + 1])
            paths = scan.resolve(args[i + 1])
            scan.base = paths[0] if paths else None
            i += 2
            continue
        if w in ("-u", "--unset"):
            i += 2
            continue
        if w.startswith("-"):
            i += 1
            continue
        break
    if i < len(args):
        rate_words(args[i:], scan, fed=fed)
    scan.base = base


def _rate_xargs(args: list[str], scan: Scan) -> None:
    takes = {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter"}
    i = 0
    while i < len(args) and unmask(args[i]).startswith("-"):
        w = unmask(args[i])
        if w in ("-a", "--arg-file") and i + 1 < len(args):
            scan.read(args[i + 1])
        i += 2 if w in takes else 1
    rate_words(args[i:] or ["echo"], scan, fed=True)


def _rate_cd(name: str, args: list[str], scan: Scan) -> None:
    _, pos, _ = options(args)
    if name == "popd" or (pos and unmask(pos[0]) == "-"):
        scan.base = None
        scan.add(RiskLevel.L2, "reads_outside_cwd")
        return
    target = pos[0] if pos else "~"
    scan.read(target)
    paths = scan.resolve(target)
    scan.base = paths[0] if paths and len(paths) == 1 else None


def _rate_find(args: list[str], scan: Scan, fed: bool) -> None:
    i = 0
    while i < len(args) and unmask(args[i]) in ("-H", "-L", "-P"):
        i += 1
    starts: list[str] = []
    while i < len(args) and not unmask(args[i]).startswith(("-", "(", "!", ")")):
        starts.append(args[i])
        i += 1
    starts = starts or ["."]
    for s in starts:
        scan.read(s, recursive=True)
    while i < len(args):
        w = unmask(args[i])
        if w in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and unmask(args[j]) not in (";", "+"):
                j += 1
            inner = args[i + 1 : j]
            for s in starts:
                rate_words([s if unmask(x) == "{}" else x for x in inner], scan)
            i = j + 1
            continue
        if w == "-delete":
            scan.add(RiskLevel.L3, "recursive_delete")
            for s in starts:
                scan.write(s)
        elif w in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            scan.write(args[i + 1])
        i += 1
