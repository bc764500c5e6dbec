"""Shell command text → simple commands, the way ``/bin/sh`` splits it, and word helpers.

The command is split on ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines into simple commands
with their redirections by ``shlex`` (posix, with punctuation characters). shlex forgets which
characters were quoted, so a short pre-pass (:func:`mask_quotes`) replaces quoted or escaped
special characters by private-use stand-ins first: ``echo ";"`` stays one command, a quoted
``*`` is no glob and a quoted ``$`` no expansion. Words stay masked; :func:`unmask` gives a
word's text, and :func:`options` / :func:`after_eq` / :func:`has_short` read a command's
options. Whatever is not analysed here raises :class:`Unparsed` (the rating fails closed).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

#: characters that keep a meaning after shlex has removed the quotes around them
_SPECIAL = ";&|<>()\n#$*?[~`{}="
_MASK = {c: chr(0xF0000 + ord(c)) for c in _SPECIAL}
_UNMASK = str.maketrans({v: k for k, v in _MASK.items()})
#: marks a file-descriptor number written against its redirection (``2>``)
_FD = chr(0xF00FD)
_OPERATOR_CHARS = ";&|<>()\n"
_OPERATORS = re.compile(r"&>>|&>|>>|>&|>\||<<<|<<-|<<|<>|<&|&&|\|\||;;|\|&|[;&|\n<>()]")
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n"})
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
GLOB_CHARS = frozenset("*?[")
#: ``>&2``, ``>&-``: a descriptor, not a file
DESCRIPTOR_DUP = re.compile(r"[0-9]+-?|-")


class Unparsed(Exception):
    """The command (or a part of it) is not something this module analyses: fail closed."""


def mask_quotes(command: str) -> tuple[str, bool]:
    """The command with quoted/escaped special characters replaced by stand-ins (quotes kept
    for shlex), comments dropped; and whether it substitutes a command (``$(``, a backtick,
    ``<(`` / ``>(`` outside single quotes). Raises ``Unparsed`` for an unclosed quote."""
    if any(0xF0000 <= ord(c) <= 0xFFFFF for c in command):
        raise Unparsed
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
            if c == "\\" and nxt and nxt in '$`"\\\n':
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
        raise Unparsed
    return "".join(out), subst


def tokenize(masked: str) -> list[str]:
    lex = shlex.shlex(masked, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError as exc:
        raise Unparsed from exc


def _is_operator(tok: str) -> bool:
    return bool(tok) and all(c in _OPERATOR_CHARS for c in tok)


@dataclass
class Simple:
    words: list[str] = field(default_factory=list)
    #: (operator, target word) — target "" for a descriptor duplication
    redirects: list[tuple[str, str]] = field(default_factory=list)


def split_commands(tokens: list[str]) -> list[Simple]:
    """Simple commands in order, each with its redirections."""
    out: list[Simple] = [Simple()]
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
                raise Unparsed
            if op in _SEPARATORS:
                out.append(Simple())
            elif op in ("(", ")", ";;"):
                raise Unparsed
            else:
                pending = op
    if pending is not None:
        raise Unparsed
    return [s for s in out if s.words or s.redirects]


def unmask(word: str) -> str:
    """A masked word's text: the stand-ins turned back into the characters they hide."""
    return word.translate(_UNMASK)


def options(
    args: list[str], with_value: frozenset[str] = frozenset()
) -> tuple[list[str], list[str], dict[str, str]]:
    """(option words, positional words, option → value) — values of ``with_value`` options
    (``-t DIR``, ``--target-directory=DIR``) are taken from the next word or after ``=``."""
    opts: list[str] = []
    pos: list[str] = []
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        w = unmask(args[i])
        if w == "--":
            pos.extend(args[i + 1 :])
            break
        if w.startswith("--") and "=" in w:
            name = w.split("=", 1)[0]
            opts.append(name)
            values[name] = after_eq(args[i])
        elif w.startswith("-") and len(w) > 1:
            opts.append(w)
            if w in with_value and i + 1 < len(args):
                values[w] = args[i + 1]
                i += 1
        else:
            pos.append(args[i])
        i += 1
    return opts, pos, values


def after_eq(word: str) -> str:
    """The value of a masked ``--name=value`` word (its ``=`` may have been quoted)."""
    cut = min((i for i in (word.find("="), word.find(_MASK["="])) if i >= 0), default=-1)
    return word[cut + 1 :]


def has_short(opts: list[str], letter: str) -> bool:
    """Whether a short-option word (``-r``, ``-rf``) among ``opts`` holds ``letter``."""
    return any(o.startswith("-") and not o.startswith("--") and letter in o[1:] for o in opts)
