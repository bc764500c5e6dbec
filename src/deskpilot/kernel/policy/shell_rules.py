"""Rate and decide a shell command (the agent's ``bash`` tool) before anything runs.

A command runs as the server's user with ``/bin/sh -c`` in a working directory, so it is an
action like any other: it gets a risk level from what the command text says it will do, with
the signal that set it as the rating's reason code (docs/policy.md, "Shell commands"):

* L1 ``reversible_local`` — ``read_only_command``: every simple command is a known inspector
  (ls, cat, grep, find without -exec/-delete, wc, head, echo, git status/log/diff …) whose
  paths stay inside the working directory.
* L2 ``external_write`` — ``writes_in_cwd``: something is written, moved or deleted (a
  redirection, tee, cp, mv, mkdir, touch, rm without -r, sed -i, chmod, git add/commit …) and
  every target resolves inside the working directory; ``reads_outside_cwd``: an inspector reads
  a path outside it (or one that cannot be resolved, ``$VAR/x``, or ``cd`` leaves it).
* L3 ``high_impact`` (a confirmation from the person) — ``recursive_delete`` (rm -r/-rf/-fr/
  --recursive, find -delete), ``privilege_tool`` (sudo, su, pkexec, doas …: launch_rules'
  ``PRIVILEGE_TOOLS``), ``destructive_tool`` (dd, mkfs*, shred, wipefs, fdisk …),
  ``recursive_permission_change`` (chmod/chown/chgrp -R), ``process_signal`` (kill, pkill,
  killall …), ``system_control`` (shutdown, systemctl, mount, date -s …), ``git_destructive``
  (push --force, reset --hard, clean, branch -D, stash drop/clear, checkout -f …),
  ``write_outside_cwd`` (a write target that resolves outside the working directory after
  ``~``, ``..``, absolute paths, symlinks and globs; ``/dev/null`` and the standard streams
  are fine), ``sensitive_path`` (credentials, shell start-up files, deskpilot's own data dir,
  ``.git/hooks`` / ``.git/config``), ``network_tool`` (curl, wget, nc, ssh, scp, rsync to a
  host, dig, ping, git clone/fetch/pull/push …), ``package_manager`` (pip/npm install, apt …),
  ``desktop_input`` (xdotool, wmctrl, xclip …: input and clipboard outside the kernel's
  action policy), ``detaches_process`` (setsid, at, crontab: work that outlives the action),
  ``environment_override`` (PATH=, LD_PRELOAD=, GIT_* … before a command), and fail-closed
  signals for what cannot be analysed: ``command_substitution`` (``$(…)``, backticks,
  ``<(…)``), ``shell_evaluation`` (eval, exec, source, ``.``, trap), ``nested_shell`` (sh -c,
  bash, busybox …), ``interpreter`` (python, perl, node, awk … — code or a script),
  ``heredoc``, ``runs_hidden_command`` (sed's e/w/r commands, git -c / git config writes),
  ``unknown_program`` (a program this table does not know, one given by a path outside the
  standard bin dirs, or a command name from a variable) and ``unparsed`` (an unclosed quote,
  subshells, ``if``/``for``/``while``/``case``/functions).

The command is split the way the shell splits it — on ``;``, ``&&``, ``||``, ``|``, ``&`` and
newlines, into simple commands with their redirections — by ``shlex`` (posix, with
punctuation characters). shlex forgets which characters were quoted, so a short pre-pass
(:func:`_mask`) replaces quoted or escaped special characters by private-use stand-ins first:
``echo ";"`` stays one command, a quoted ``*`` is no glob and a quoted ``$`` no expansion.
Every simple command is checked, also after ``env``/``nohup``/``timeout``/``nice``/``xargs``/
``command`` prefixes and inside ``find -exec``. ``cd`` moves the directory later relative paths
resolve against. The rating lists the highest level's signals first (the first is the one
that set the level), then the others.
"""

from __future__ import annotations

import enum
import glob
import os
import re
import shlex
from dataclasses import dataclass, field

from deskpilot.kernel.policy.context import PolicyContext
from deskpilot.kernel.policy.engine import PolicyDecision, Reason
from deskpilot.kernel.policy.launch_rules import PRIVILEGE_TOOLS, STANDARD_BIN_DIRS, restricted_kind
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    Decision,
    EffectClass,
    RiskLevel,
    TargetKind,
    TaskContract,
    UserPresence,
)
from deskpilot.protocol.wire import AppIdentity
from deskpilot.store.settings import SettingsModel

SHELL_KIND = "bash"
#: names a contract's forbiddenActions may use for every command
FORBIDDEN_NAMES = (SHELL_KIND, "shell")
MAX_COMMAND_CHARS = 16_000
MAX_TIMEOUT_S = 3_600.0


class ShellReason(enum.StrEnum):
    SHELL_CONFIRMATION_REQUIRED = "shell_confirmation_required"


@dataclass(frozen=True, slots=True)
class ShellRequest:
    """A command the agent asked for; nothing of it has run yet."""

    command: str
    #: absolute path of the working directory (the scope "inside" is measured against)
    cwd: str
    timeout_s: float


@dataclass(frozen=True, slots=True)
class ShellRating:
    risk: RiskLevel
    #: the signal that set the level first, then the others
    signals: tuple[str, ...] = field(default_factory=tuple)

    @property
    def rating(self) -> str:
        return self.signals[0] if self.signals else "read_only_command"


def validate_shell(req: ShellRequest) -> None:
    """A request the kernel can govern at all; otherwise ``invalid_request``."""
    problem = None
    if not req.command.strip():
        problem = "the command is empty"
    elif len(req.command) > MAX_COMMAND_CHARS:
        problem = f"the command is longer than {MAX_COMMAND_CHARS} characters"
    elif "\x00" in req.command:
        problem = "the command contains a NUL byte"
    elif not os.path.isabs(req.cwd) or not os.path.isdir(req.cwd):
        problem = "cwd must be the absolute path of an existing directory"
    elif not 0 < req.timeout_s <= MAX_TIMEOUT_S:
        problem = f"timeout_s must be above 0 and at most {MAX_TIMEOUT_S:g}"
    if problem is not None:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, problem)


# ---------------------------------------------------------------------- the tables

READ_ONLY = frozenset(
    {
        "ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "file", "stat",
        "du", "df", "tree", "sort", "uniq", "cut", "tr", "nl", "tac", "rev", "column", "diff",
        "cmp", "comm", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
        "sha512sum", "b2sum", "cksum", "strings", "od", "hexdump", "less", "more", "jq",
        "base64", "paste", "join", "fold", "fmt", "expand", "unexpand", "look", "lsattr",
        "getfacl", "namei",
    }
)  # fmt: skip
#: inspectors whose arguments are not files
NO_PATH_ARGS = frozenset(
    {
        "echo", "printf", "pwd", "whoami", "id", "groups", "uname", "nproc", "arch", "tty",
        "locale", "uptime", "free", "ps", "lsblk", "lscpu", "printenv", "which", "type",
        "basename", "dirname", "realpath", "readlink", "true", "false", "test", "[", ":",
        "sleep", "seq", "yes", "expr", "date", "xprop", "xwininfo", "xdpyinfo", "xlsclients",
        "set", "unset", "shopt", "umask", "ulimit", "wait", "exit", "return", "shift", "hash",
        "export", "declare", "typeset", "readonly", "local", "env", "pgrep", "pidof",
    }
)  # fmt: skip
#: every argument is written (created, changed, moved away or deleted)
WRITE_ALL = frozenset(
    {
        "touch", "mkdir", "rmdir", "rm", "mv", "chmod", "chown", "chgrp", "truncate", "tee",
        "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz",
    }
)  # fmt: skip
#: the last argument (or -t DIR) is written, the others are read
WRITE_LAST = frozenset({"cp", "ln", "install", "rsync"})
NETWORK_TOOLS = frozenset(
    {
        "curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "ftp", "lftp", "telnet",
        "socat", "nmap", "ping", "ping6", "dig", "nslookup", "host", "whois", "traceroute",
        "tracepath", "mtr", "aria2c", "http", "https", "xh", "gh", "openssl", "rclone",
        "mosh",
    }
)  # fmt: skip
PACKAGE_TOOLS = frozenset(
    {
        "apt", "apt-get", "aptitude", "dpkg", "snap", "flatpak", "pip", "pip3", "pipx", "npm",
        "npx", "pnpm", "yarn", "gem", "cargo", "go", "conda", "brew", "dnf", "yum", "zypper",
        "pacman", "apk", "uv",
    }
)  # fmt: skip
#: package-tool subcommands that only report
PACKAGE_QUERIES = frozenset(
    {"list", "ls", "show", "freeze", "version", "--version", "-v", "-V", "help", "--help"}
)
DESTRUCTIVE_TOOLS = frozenset(
    {
        "dd", "shred", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk",
        "mkswap", "badblocks", "blkdiscard", "hdparm", "mke2fs", "tune2fs", "srm",
    }
)  # fmt: skip
SYSTEM_CONTROL = frozenset(
    {
        "shutdown", "reboot", "poweroff", "halt", "systemctl", "loginctl", "init", "telinit",
        "mount", "umount", "swapon", "swapoff", "losetup", "cryptsetup", "modprobe", "insmod",
        "rmmod", "sysctl", "iptables", "ip6tables", "nft", "ufw", "service", "timedatectl",
        "hostnamectl", "useradd", "userdel", "usermod", "passwd", "chpasswd",
    }
)  # fmt: skip
SIGNAL_TOOLS = frozenset({"kill", "pkill", "killall", "killall5", "skill", "xkill"})
DETACH_TOOLS = frozenset({"setsid", "at", "batch", "crontab", "daemonize", "start-stop-daemon"})
DESKTOP_INPUT = frozenset(
    {
        "xdotool", "ydotool", "xte", "wmctrl", "xclip", "xsel", "wl-copy", "wl-paste",
        "xinput", "xset", "xrandr", "setxkbmap", "xmodmap", "xsendkey",
    }
)  # fmt: skip
EVALUATORS = frozenset({"eval", "exec", "source", ".", "trap", "alias", "enable", "coproc"})
#: words that open or close a compound command: not analysed, fail closed
COMPOUND = frozenset(
    {
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
        "esac", "select", "function", "{", "}", "[[", "]]",
    }
)  # fmt: skip
#: prefixes that run the rest of the words as the command
PREFIXES = frozenset({"nohup", "time", "!", "builtin", "nice", "ionice", "stdbuf", "timeout"})
_ENV_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
#: variables that change which program runs or what it loads
_RISKY_ENV = re.compile(
    r"^(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|CDPATH|PAGER|EDITOR|"
    r"VISUAL|LD_.*|GIT_.*|PYTHON.*|PERL.*|RUBY.*|NODE_OPTIONS|DYLD_.*)$"
)
#: paths a write may always name
SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
#: under the home directory: credentials, and files that run code at the next login
_HOME_SENSITIVE = (
    ".ssh", ".gnupg", ".pki", ".local/share/keyrings", ".password-store", ".netrc", ".aws",
    ".azure", ".kube", ".docker", ".config/gcloud", ".config/gh", ".git-credentials",
    ".config/autostart", ".config/systemd", ".bashrc", ".bash_profile", ".bash_login",
    ".profile", ".zshrc", ".zprofile", ".xprofile", ".xsessionrc", ".pam_environment",
    ".mozilla", ".config/chromium", ".config/google-chrome",
)  # fmt: skip
_SYSTEM_SENSITIVE = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d")

_LEVEL = {
    "read_only_command": RiskLevel.L1,
    "writes_in_cwd": RiskLevel.L2,
    "reads_outside_cwd": RiskLevel.L2,
}
_EFFECT = {
    RiskLevel.L1: EffectClass.REVERSIBLE_LOCAL,
    RiskLevel.L2: EffectClass.EXTERNAL_WRITE,
    RiskLevel.L3: EffectClass.HIGH_IMPACT,
}

# ---------------------------------------------------------------------- quoting

#: characters that keep a meaning after shlex has removed the quotes around them
_SPECIAL = ";&|<>()\n#$*?[~`{}="
_MASK = {c: chr(0xF0000 + ord(c)) for c in _SPECIAL}
_UNMASK = str.maketrans({v: k for k, v in _MASK.items()})
#: marks a file-descriptor number written against its redirection (``2>``)
_FD = chr(0xF00FD)
_OPERATOR_CHARS = ";&|<>()\n"
_OPERATORS = re.compile(r"&>>|&>|>>|>&|>\||<<<|<<-|<<|<>|<&|&&|\|\||;;|\|&|[;&|\n<>()]")
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_GLOB = frozenset("*?[")
#: ``>&2``, ``>&-``: a descriptor, not a file
_DUP = re.compile(r"[0-9]+-?|-")


class _Unparsed(Exception):
    """The command (or a part of it) is not something this module analyses: fail closed."""


def _mask(command: str) -> tuple[str, bool]:
    """The command with quoted/escaped special characters replaced by stand-ins (quotes kept
    for shlex), comments dropped; and whether it substitutes a command (``$(``, a backtick,
    ``<(`` / ``>(`` outside single quotes). Raises ``_Unparsed`` for an unclosed quote."""
    if any(0xF0000 <= ord(c) <= 0xFFFFF for c in command):
        raise _Unparsed
    out: list[str] = []
    subst = False
    i, n = 0, len(command)
    quote = ""
    while i < n:
        c = command[i]
        nxt = command[i + 1] if i + 1 < n else ""
        if quote == "'":
            if c == "'":
                quote = ""
            out.append(_MASK.get(c, c) if c != "'" else c)
        elif quote == '"':
            if c == "\\" and nxt in '$`"\\\n':
                if nxt in "$`":
                    out.append(_MASK[nxt])
                elif nxt != "\n":
                    out.append(c + nxt)
                i += 2
                continue
            if c == '"':
                quote = ""
                out.append(c)
            elif c in "$`":
                subst = subst or c == "`" or nxt == "("
                out.append(c)
            else:
                out.append(_MASK.get(c, c))
        elif c == "\\":
            if nxt == "\n":
                i += 2
                continue
            out.append(_MASK[nxt] if nxt in _MASK else c + nxt)
            i += 2
            continue
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c == "#" and (not out or out[-1] in " \t\r" + _OPERATOR_CHARS):
            while i < n and command[i] != "\n":
                i += 1
            continue
        else:
            if c == "`" or (c == "$" and nxt == "(") or (c in "<>" and nxt == "("):
                subst = True
            if c.isdigit() and (not out or out[-1] in " \t\r" + _OPERATOR_CHARS):
                j = i
                while j < n and command[j].isdigit():
                    j += 1
                if j < n and command[j] in "<>":
                    out.append(_FD + command[i:j])
                    i = j
                    continue
            out.append(c)
        i += 1
    if quote:
        raise _Unparsed
    return "".join(out), subst


def _tokens(masked: str) -> list[str]:
    lex = shlex.shlex(masked, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError as exc:
        raise _Unparsed from exc


def _is_operator(tok: str) -> bool:
    return bool(tok) and all(c in _OPERATOR_CHARS for c in tok)


@dataclass
class _Simple:
    words: list[str] = field(default_factory=list)
    #: (operator, target word) — target "" for a descriptor duplication
    redirects: list[tuple[str, str]] = field(default_factory=list)


def _split(tokens: list[str]) -> list[_Simple]:
    """Simple commands in order, each with its redirections."""
    out: list[_Simple] = [_Simple()]
    pending: str | None = None
    for tok in tokens:
        if not _is_operator(tok):
            if pending is not None:
                out[-1].redirects.append((pending, tok))
                pending = None
            elif not tok.startswith(_FD):
                out[-1].words.append(tok)
            continue
        for op in _OPERATORS.findall(tok):
            if pending is not None:
                raise _Unparsed
            if op in _SEPARATORS:
                out.append(_Simple())
            elif op in ("(", ")", ";;"):
                raise _Unparsed
            else:
                pending = op
    if pending is not None:
        raise _Unparsed
    return [s for s in out if s.words or s.redirects]


def _value(word: str) -> str:
    return word.translate(_UNMASK)


# ---------------------------------------------------------------------- paths


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def sensitive_roots() -> tuple[str, ...]:
    """Credentials, login scripts and deskpilot's own state (its database, vault, settings):
    naming any of them is L3 whatever the command."""
    home = os.path.expanduser("~")
    data = os.environ.get("DESKPILOT_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "deskpilot"
    )
    paths = [os.path.join(home, p) for p in _HOME_SENSITIVE] + [*_SYSTEM_SENSITIVE, data]
    return tuple(os.path.realpath(os.path.expanduser(p)) for p in paths)


@dataclass
class _Scan:
    root: str
    #: where relative paths resolve now (``cd`` moves it); None once it cannot be known
    base: str | None
    sensitive: tuple[str, ...]
    found: dict[RiskLevel, list[str]] = field(default_factory=dict)

    def add(self, level: RiskLevel, code: str) -> None:
        codes = self.found.setdefault(level, [])
        if code not in codes:
            codes.append(code)

    def resolve(self, word: str) -> list[str] | None:
        """Absolute, symlink-resolved paths a word names (its live globs expanded); None when
        it depends on a variable, an unknown user's home or a directory ``cd`` lost."""
        if "$" in word:
            return None
        head, rest = "", word
        if word.startswith("~"):
            user, sep, tail = word.partition("/")
            home = os.path.expanduser(_value(user))
            if home.startswith("~"):
                return None
            head, rest = home + sep, tail
        elif not _value(word).startswith("/"):
            if self.base is None:
                return None
            head = self.base + "/"
        literal = head + _value(rest)
        candidates = [literal]
        if any(c in _GLOB for c in rest):  # quoted glob characters are masked, not in _GLOB
            pattern = glob.escape(head) + "".join(
                c if c in _GLOB else glob.escape(_value(c)) for c in rest
            )
            candidates = glob.glob(pattern, include_hidden=True) or [literal]
        return [os.path.realpath(c) for c in candidates]

    def is_sensitive(self, path: str, *, recursive: bool = False) -> bool:
        if any(_inside(path, s) for s in self.sensitive):
            return True
        if recursive and any(_inside(s, path) for s in self.sensitive):
            return True
        parts = path.split("/")
        return ".git" in parts and parts[parts.index(".git") + 1 : parts.index(".git") + 2] in (
            ["hooks"],
            ["config"],
        )

    def read(self, word: str, *, recursive: bool = False) -> None:
        paths = self.resolve(word)
        if paths is None:
            self.add(RiskLevel.L2, "reads_outside_cwd")
            return
        for p in paths:
            if self.is_sensitive(p, recursive=recursive):
                self.add(RiskLevel.L3, "sensitive_path")
            elif not _inside(p, self.root):
                self.add(RiskLevel.L2, "reads_outside_cwd")

    def write(self, word: str) -> None:
        literal = os.path.normpath(_value(word)) if "$" not in word else ""
        if literal in SAFE_DEVICES or literal.startswith("/dev/fd/"):
            return
        paths = self.resolve(word)
        if paths is None:
            self.add(RiskLevel.L3, "write_outside_cwd")
            return
        for p in paths:
            if self.is_sensitive(p):
                self.add(RiskLevel.L3, "sensitive_path")
            elif not _inside(p, self.root):
                self.add(RiskLevel.L3, "write_outside_cwd")
            else:
                self.add(RiskLevel.L2, "writes_in_cwd")


# ---------------------------------------------------------------------- commands


def _options(
    args: list[str], with_value: frozenset[str] = frozenset()
) -> tuple[list[str], list[str], dict[str, str]]:
    """(option words, positional words, option → value) — values of ``with_value`` options
    (``-t DIR``, ``--target-directory=DIR``) are taken from the next word or after ``=``."""
    opts: list[str] = []
    pos: list[str] = []
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        w = _value(args[i])
        if w == "--":
            pos.extend(args[i + 1 :])
            break
        if w.startswith("--") and "=" in w:
            name = w.split("=", 1)[0]
            opts.append(name)
            values[name] = _after_eq(args[i])
        elif w.startswith("-") and len(w) > 1:
            opts.append(w)
            if w in with_value and i + 1 < len(args):
                values[w] = args[i + 1]
                i += 1
        else:
            pos.append(args[i])
        i += 1
    return opts, pos, values


def _after_eq(word: str) -> str:
    """The value of a masked ``--name=value`` word (its ``=`` may have been quoted)."""
    cut = min((i for i in (word.find("="), word.find(_MASK["="])) if i >= 0), default=-1)
    return word[cut + 1 :]


def _short(opts: list[str], letter: str) -> bool:
    return any(o.startswith("-") and not o.startswith("--") and letter in o[1:] for o in opts)


def _program(word: str, scan: _Scan) -> str | None:
    """The program's name, or None when it cannot be trusted to be the system's."""
    value = _value(word)
    if "$" in word or any(c in _GLOB for c in word) or not value:
        return None
    if "/" in value:
        path = os.path.join(scan.base or "/", os.path.expanduser(value))
        if os.path.dirname(os.path.normpath(path)) not in STANDARD_BIN_DIRS:
            return None
        return os.path.basename(path)
    return value


def _rate_simple(simple: _Simple, scan: _Scan) -> None:
    for op, target in simple.redirects:
        if op in ("<<", "<<-"):
            scan.add(RiskLevel.L3, "heredoc")
        elif op == "<":
            scan.read(target)
        elif op in _WRITE_REDIRECTS or (op == ">&" and not _DUP.fullmatch(_value(target))):
            scan.write(target)
    _rate_words(simple.words, scan)


def _rate_words(words: list[str], scan: _Scan, *, fed: bool = False) -> None:
    """One simple command (``fed``: xargs adds arguments from its input)."""
    while words and _ENV_NAME.match(words[0]):
        name = _ENV_NAME.match(words[0]).group(1)  # type: ignore[union-attr]
        if _RISKY_ENV.match(name):
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
            "git": _rate_git,
            "sed": _rate_sed,
            "rm": _rate_rm,
            "sort": _rate_sort,
            "uniq": _rate_uniq,
            "date": _rate_date,
        }.get(name, _rate_package)(args, scan, fed)
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
        _rate_writer(name, args, scan, fed)
    elif name in READ_ONLY:
        recursive = name in ("rg", "tree", "du") or (
            name in ("grep", "egrep", "fgrep", "ls")
            and (_short(args, "r") or _short(args, "R") or "--recursive" in args)
        )
        _, pos, _ = _options(args)
        for w in pos:
            scan.read(w, recursive=recursive)
        if fed:
            scan.add(RiskLevel.L2, "reads_outside_cwd")
    elif name in NO_PATH_ARGS:
        if name in ("export", "declare", "typeset", "readonly", "local"):
            for w in args:
                m = _ENV_NAME.match(w)
                if m and _RISKY_ENV.match(m.group(1)):
                    scan.add(RiskLevel.L3, "environment_override")
    else:
        scan.add(RiskLevel.L3, "unknown_program")


def _rate_prefixed(name: str, args: list[str], scan: _Scan, fed: bool) -> None:
    i = 0
    if name == "command":
        if any(_value(a) in ("-v", "-V") for a in args[:2]):
            return
        i = 1 if args and _value(args[0]) == "-p" else 0
    elif name == "nice":
        if args and _value(args[0]) == "-n":
            i = 2
        elif args and re.fullmatch(r"-[0-9]+|--adjustment=.*", _value(args[0])):
            i = 1
    elif name == "timeout":
        while i < len(args) and _value(args[i]).startswith("-"):
            i += 2 if _value(args[i]) in ("-s", "-k") else 1
        i += 1  # the duration
    elif name in ("ionice", "stdbuf", "time"):
        while i < len(args) and _value(args[i]).startswith("-"):
            takes = name == "ionice" and _value(args[i]) in ("-c", "-n", "-p", "-P", "-u")
            takes = takes or (name == "stdbuf" and _value(args[i]) in ("-i", "-o", "-e"))
            i += 2 if takes else 1
    _rate_words(args[i:], scan, fed=fed)


def _rate_env(args: list[str], scan: _Scan, fed: bool) -> None:
    i = 0
    base = scan.base
    while i < len(args):
        w = _value(args[i])
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
        _rate_words(args[i:], scan, fed=fed)
    scan.base = base


def _rate_xargs(args: list[str], scan: _Scan) -> None:
    takes = {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter"}
    i = 0
    while i < len(args) and _value(args[i]).startswith("-"):
        w = _value(args[i])
        if w in ("-a", "--arg-file") and i + 1 < len(args):
            scan.read(args[i + 1])
        i += 2 if w in takes else 1
    _rate_words(args[i:] or ["echo"], scan, fed=True)


def _rate_cd(name: str, args: list[str], scan: _Scan) -> None:
    _, pos, _ = _options(args)
    if name == "popd" or (pos and _value(pos[0]) == "-"):
        scan.base = None
        scan.add(RiskLevel.L2, "reads_outside_cwd")
        return
    target = pos[0] if pos else "~"
    scan.read(target)
    paths = scan.resolve(target)
    scan.base = paths[0] if paths and len(paths) == 1 else None


#: writer options whose value is the next word
_WRITER_VALUES = {
    "cp": {"-t", "--target-directory", "-S", "--suffix"},
    "mv": {"-t", "--target-directory", "-S", "--suffix"},
    "ln": {"-t", "--target-directory", "-S", "--suffix"},
    "install": {"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner",
                "-g", "--group"},
    "touch": {"-r", "--reference", "-d", "--date", "-t"},
    "mkdir": {"-m", "--mode"},
    "truncate": {"-s", "--size", "-r", "--reference"},
    "rsync": {"-e", "--rsh"},
}  # fmt: skip
_CHMOD_MODE_OPTION = re.compile(r"^-[rwxXst]+$")


def _rate_writer(name: str, args: list[str], scan: _Scan, fed: bool) -> None:
    opts, pos, values = _options(args, frozenset(_WRITER_VALUES.get(name, ())))
    if name == "rsync" and (
        "-e" in opts
        or "--rsh" in opts
        or any(re.match(r"^[^/]*::|^[^/]+:|^rsync://", _value(p)) for p in pos)
    ):
        scan.add(RiskLevel.L3, "network_tool")
    if name in ("chmod", "chown", "chgrp"):
        if _short([o for o in opts if not _CHMOD_MODE_OPTION.match(o)], "R") or (
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


def _generic_outputs(args: list[str], scan: _Scan) -> None:
    for w in args:
        v = _value(w)
        if re.match(r"^--(output|output-file|outfile|log-file)=", v):
            scan.write(_after_eq(w))


def _rate_rm(args: list[str], scan: _Scan, fed: bool) -> None:
    opts, _, _ = _options(args)
    if _short(opts, "r") or _short(opts, "R") or "--recursive" in opts:
        scan.add(RiskLevel.L3, "recursive_delete")
    _rate_writer("rm", args, scan, fed)


def _rate_sort(args: list[str], scan: _Scan, fed: bool) -> None:
    opts, pos, values = _options(args, frozenset({"-o", "-k", "-t", "-S", "-T", "--output"}))
    out = values.get("-o") or values.get("--output")
    if out is not None:
        scan.write(out)
    if any(o.startswith("--compress-program") for o in opts):
        scan.add(RiskLevel.L3, "runs_hidden_command")
    for w in pos:
        scan.read(w)


def _rate_uniq(args: list[str], scan: _Scan, fed: bool) -> None:
    _, pos, _ = _options(args, frozenset({"-f", "-s", "-w"}))
    if pos:
        scan.read(pos[0])
    if len(pos) > 1:
        scan.write(pos[1])


def _rate_date(args: list[str], scan: _Scan, fed: bool) -> None:
    if any(_value(a) in ("-s", "--set") or _value(a).startswith("--set=") for a in args):
        scan.add(RiskLevel.L3, "system_control")


def _rate_package(args: list[str], scan: _Scan, fed: bool) -> None:
    _, pos, _ = _options(args)
    first = _value(pos[0]) if pos else (_value(args[0]) if args else "")
    if first not in PACKAGE_QUERIES:
        scan.add(RiskLevel.L3, "package_manager")


def _rate_find(args: list[str], scan: _Scan, fed: bool) -> None:
    i = 0
    while i < len(args) and _value(args[i]) in ("-H", "-L", "-P"):
        i += 1
    starts: list[str] = []
    while i < len(args) and not _value(args[i]).startswith(("-", "(", "!", ")")):
        starts.append(args[i])
        i += 1
    starts = starts or ["."]
    for s in starts:
        scan.read(s, recursive=True)
    while i < len(args):
        w = _value(args[i])
        if w in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and _value(args[j]) not in (";", "+"):
                j += 1
            inner = args[i + 1 : j]
            for s in starts:
                _rate_words([s if _value(x) == "{}" else x for x in inner], scan)
            i = j + 1
            continue
        if w == "-delete":
            scan.add(RiskLevel.L3, "recursive_delete")
            for s in starts:
                scan.write(s)
        elif w in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            scan.write(args[i + 1])
        i += 1


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


def _rate_sed(args: list[str], scan: _Scan, fed: bool) -> None:
    opts, pos, values = _options(
        args, frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})
    )
    scripts = [_value(args[i + 1]) for i, a in enumerate(args[:-1]) if _value(a) == "-e"]
    scripts += [values[k] for k in ("--expression",) if k in values]
    script_file = values.get("-f") or values.get("--file")
    if script_file is not None:
        scan.read(script_file)
        scan.add(RiskLevel.L3, "runs_hidden_command")
    if not scripts and script_file is None and pos:
        scripts, pos = [_value(pos[0])], pos[1:]
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


GIT_READ = frozenset(
    {
        "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "grep", "blame",
        "describe", "shortlog", "cat-file", "rev-list", "merge-base", "name-rev",
        "check-ignore", "count-objects", "version", "help", "whatchanged", "show-ref",
        "for-each-ref", "var", "annotate", "diff-tree", "diff-files", "diff-index",
        "--version", "--help",
    }
)  # fmt: skip
GIT_WRITE = frozenset(
    {
        "add", "commit", "checkout", "switch", "restore", "merge", "rebase", "cherry-pick",
        "revert", "init", "mv", "rm", "am", "apply", "notes", "reset", "stash", "tag",
        "branch", "worktree", "remote", "gc", "prune", "bisect", "sparse-checkout", "reflog",
        "clean", "filter-branch", "filter-repo",
    }
)  # fmt: skip
GIT_NETWORK = frozenset(
    {"clone", "fetch", "pull", "push", "ls-remote", "submodule", "send-email", "request-pull"}
)
#: branch / tag / stash / remote / worktree / reflog with these first words only report
_GIT_LISTING = frozenset({"list", "show", "get-url"})


def _rate_git(args: list[str], scan: _Scan, fed: bool) -> None:
    repo = "."
    i = 0
    while i < len(args) and _value(args[i]).startswith("-"):
        w = _value(args[i])
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
    sub, rest = _value(args[i]), args[i + 1 :]
    vals = [_value(a) for a in rest]
    opts, pos, _ = _options(rest)
    first = _value(pos[0]) if pos else ""
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
        not pos or first in _GIT_LISTING
    )
    if sub in GIT_READ or listing:
        scan.read(repo, recursive=sub == "grep")
    elif sub in GIT_WRITE or sub in ("clone", "pull", "submodule", "update-ref"):
        scan.write(repo)
    elif sub not in GIT_NETWORK:
        scan.add(RiskLevel.L3, "unknown_program")
    _generic_outputs(rest, scan)


# ---------------------------------------------------------------------- rating, decision


def rate_shell(req: ShellRequest) -> ShellRating:
    root = os.path.realpath(req.cwd)
    scan = _Scan(root=root, base=root, sensitive=sensitive_roots())
    try:
        masked, subst = _mask(req.command)
        if subst:
            scan.add(RiskLevel.L3, "command_substitution")
        for simple in _split(_tokens(masked)):
            _rate_simple(simple, scan)
    except _Unparsed:
        scan.add(RiskLevel.L3, "unparsed")
    if not scan.found:
        return ShellRating(RiskLevel.L1, ("read_only_command",))
    levels = sorted(scan.found, reverse=True)
    signals = tuple(code for level in levels for code in scan.found[level])
    return ShellRating(levels[0], signals)


def _context(req: ShellRequest, rating: ShellRating) -> PolicyContext:
    return PolicyContext(
        kind=SHELL_KIND,
        effect=_EFFECT[rating.risk],
        target_kind=TargetKind.UNKNOWN,
        data_classes=frozenset(),
        text_write=False,
        sensitive_target=False,
        app=AppIdentity(executable="sh"),
        url=None,
        host=None,
        is_browser=False,
        signals=rating.signals,
        target_label=None,
    )


def _threshold(setting: str) -> RiskLevel | None:
    return None if setting == "off" else RiskLevel(int(setting[1:]))


def evaluate_shell(
    req: ShellRequest, contract: TaskContract, settings: SettingsModel
) -> PolicyDecision:
    """The command's decision; the contract fields in ``evaluate_launch``'s order.

    ``forbiddenActions`` naming ``bash``, ``shell``, the rating's effect class or
    ``target:unknown`` (a command has no window target) denies it. ``allowedApps`` does not
    apply: it names the desktop apps a session may operate, and a command is not one of them
    (nor can naming ``sh`` there allow anything). ``allowedDomains`` is not checked either:
    every network command is L3, so the person sees its hosts before it runs. Then L3 →
    ``shell_confirmation_required``; ``userPresence`` (``supervised``: every command,
    ``required``: L2 and above) and ``requireConfirmationAbove`` as for every action."""
    rating = rate_shell(req)
    risk = rating.risk
    ctx = _context(req, rating)
    base = {"rating": rating.rating}

    def out(
        decision: Decision, reason: str, details: dict[str, str] | None = None
    ) -> PolicyDecision:
        code = str(reason)
        presence = decision == Decision.REQUIRE_APPROVAL and code.startswith("user_presence")
        return PolicyDecision(risk, decision, code, presence, ctx, {**base, **(details or {})})

    lowered = {f.strip().lower(): f.strip() for f in contract.forbidden_actions}
    for key in (*FORBIDDEN_NAMES, ctx.effect.value, f"target:{ctx.target_kind.value}"):
        if key in lowered:
            return out(Decision.DENY, Reason.FORBIDDEN_ACTION, {"entry": lowered[key]})
    if risk >= RiskLevel.L3:
        return out(Decision.REQUIRE_APPROVAL, ShellReason.SHELL_CONFIRMATION_REQUIRED)
    if contract.user_presence == UserPresence.SUPERVISED:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_SUPERVISED)
    if contract.user_presence == UserPresence.REQUIRED and risk >= RiskLevel.L2:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_REQUIRED)
    threshold = _threshold(settings.require_confirmation_above)
    if threshold is not None and risk > threshold:
        return out(Decision.REQUIRE_APPROVAL, Reason.CONFIRMATION_REQUIRED)
    return out(Decision.ALLOW, Reason.WITHIN_TASK_SCOPE)
