"""A suite written in YAML: its data, and the line each place in it starts on.

A suite file may be YAML (``.yaml``/``.yml``) as well as JSON, with the same schema (suite.py
validates both the same way). YAML is read with PyYAML's safe loader only — plain data
(mappings, lists, strings, numbers, booleans, null), never a Python object — and the node
tree it composes is kept, so a schema problem can say on which line of the file it is
(``tasks[1].setup.launch[0].app (task 'x', line 14)``), as a JSON syntax error says its line.

Aliases (``*name``) are read, but a file whose aliases expand to more than
:data:`MAX_NODES` values is refused before it is validated: a few lines of nested aliases
can stand for billions of values (the "billion laughs" file), which validation would walk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

#: values a suite may expand to (aliases counted each time they are used)
MAX_NODES = 200_000
_WORD = re.compile(r"[_-]([a-z0-9])")


class YamlError(ValueError):
    """Not a readable suite file; ``line``/``column`` (1-based) when YAML said where."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        self.line = line
        self.column = column
        where = f"line {line} column {column}: " if line is not None else ""
        super().__init__(where + message)


@dataclass(frozen=True)
class YamlSource:
    """The data of a YAML file and its composed node tree (for :meth:`line_of`)."""

    data: Any
    root: yaml.Node | None

    def line_of(self, loc: Sequence[int | str]) -> int | None:
        """The 1-based line of the deepest node ``loc`` reaches (a mapping key by its name in
        camelCase or snake_case, a list item by index); None without a tree."""
        node = self.root
        if node is None:
            return None
        line: int = node.start_mark.line + 1
        for part in loc:
            node = _child(node, part)
            if node is None:
                break
            line = node.start_mark.line + 1
        return line


def _same_key(a: str, b: str) -> bool:
    return a == b or _camel(a) == _camel(b)


def _camel(name: str) -> str:
    return _WORD.sub(lambda m: m.group(1).upper(), name)


def _child(node: yaml.Node, part: int | str) -> yaml.Node | None:
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int):
        items: list[yaml.Node] = node.value
        return items[part] if 0 <= part < len(items) else None
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
        pairs: list[tuple[yaml.Node, yaml.Node]] = node.value
        for key, value in pairs:
            if isinstance(key, yaml.ScalarNode) and _same_key(str(key.value), part):
                return value
    return None


def _count(node: yaml.Node, budget: list[int]) -> None:
    """Walk ``node`` as the data will be walked (an alias's node once per use) and stop when
    more than :data:`MAX_NODES` values are met."""
    stack = [node]
    while stack:
        budget[0] -= 1
        if budget[0] < 0:
            raise YamlError(
                f"the file expands to more than {MAX_NODES} values (its aliases repeat "
                "too much); write the suite out"
            )
        current = stack.pop()
        if isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.extend((key, value))


def read_yaml(text: str) -> YamlSource:
    """Parse ``text`` (one YAML document, safe types only); raises :class:`YamlError`."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()  # what yaml.safe_load does, the node tree kept
        if root is not None:
            _count(root, [MAX_NODES])
        data = None if root is None else loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        said = " ".join(p for p in (exc.context, exc.problem) if p) or "not YAML"
        if mark is None:
            raise YamlError(f"not YAML: {said}") from None
        raise YamlError(f"not YAML: {said}", mark.line + 1, mark.column + 1) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"not YAML: {exc}") from None
    finally:
        loader.dispose()
    return YamlSource(data, root)
