"""Tuning (pure core): the recommended config as the user's own YAML with the changed keys edited, and the diff."""

from __future__ import annotations

import copy
import difflib
import re
from typing import Any

import yaml

from daedalus_spark.config import Config


def _at(data: Any, path: str) -> Any:
    """The value at a YAML path of plain data (None where a step is missing)."""
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def changed_knobs(knobs: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The knobs (YAML path -> value) whose value differs from the effective config's (`current`, as plain data)."""
    return {path: value for path, value in knobs.items() if _at(current, path) != value}


def scalar(value: Any) -> str:
    """A value as one line of YAML."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16).strip()
    return text.removesuffix("...").strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block_end(lines: list[str], head: int, end: int) -> int:
    """Where the block under the mapping key at `head` ends: the next line as far out as it, comments aside."""
    out = _indent(lines[head])
    return next(
        (
            i
            for i in range(head + 1, end)
            if lines[i].strip() and not lines[i].lstrip().startswith("#") and _indent(lines[i]) <= out
        ),
        end,
    )


def _child_indent(lines: list[str], head: int, end: int, indent: str) -> str:
    inner = (re.match(r"\s+(?=[^\s#])", lines[i]) for i in range(head + 1, end))
    return next((m.group(0) for m in inner if m), indent + "  ")


def _edit(lines: list[str], path: str, value: Any) -> list[str]:
    """The lines with the key at `path` (section: / ... / key:) set to value: in place (comment kept), or added
    at the start of its section, the sections missing on the way added with it."""
    *sections, key = path.split(".")
    start, end, indent = 0, len(lines), ""
    for depth, section in enumerate(sections):
        pattern = re.compile(rf"{re.escape(indent)}{re.escape(section)}:\s*(#.*)?")
        head = next((i for i in range(start, end) if pattern.fullmatch(lines[i])), None)
        if head is None:
            added = [f"{indent}{'  ' * n}{name}:" for n, name in enumerate(sections[depth:])]
            added.append(f"{indent}{'  ' * (len(sections) - depth)}{key}: {scalar(value)}")
            at = end if depth == 0 else start
            return [*lines[:at], *added, *lines[at:]]
        end = _block_end(lines, head, end)
        indent, start = _child_indent(lines, head, end, indent), head + 1
    pattern = re.compile(rf"{re.escape(indent)}{re.escape(key)}:(\s*)([^#]*?)(\s*#.*)?")
    for i in range(start, end):
        m = pattern.fullmatch(lines[i])
        if m:
            return [*lines[:i], f"{indent}{key}: {scalar(value)}{m.group(3) or ''}", *lines[i + 1 :]]
    return [*lines[:start], f"{indent}{key}: {scalar(value)}", *lines[start:]]


def _as_written(data: Any, path: str) -> str:
    """The path a change is written at: a moved key's old name when the user's file still spells it so."""
    old = next((old for old, new in Config.MOVED_KEYS.items() if new == path), None)
    if old is None:
        return path
    section, _, key = old.rpartition(".")
    holder = _at(data, section)
    return old if isinstance(holder, dict) and key in holder else path


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    *sections, key = path.split(".")
    for section in sections:
        given = data.get(section)
        data[section] = dict(given) if isinstance(given, dict) else {}
        data = data[section]
    data[key] = value


def recommended_yaml(user_text: str, changes: dict[str, Any]) -> str:
    """The user's YAML with `changes` (YAML path -> value) applied, comments and order kept; when the file's layout
    defeats the line edit (flow style, anchors), the parsed data with the changes, dumped."""
    if not changes:
        return user_text
    lines = user_text.splitlines()
    expected = copy.deepcopy(yaml.safe_load(user_text) or {})
    written = {_as_written(expected, path): value for path, value in changes.items()}
    for path, value in written.items():
        lines = _edit(lines, path, value)
        _set(expected, path, value)
    text = "\n".join(lines) + "\n"
    try:
        if yaml.safe_load(text) == expected:
            return text
    except yaml.YAMLError:
        pass
    return yaml.safe_dump(expected, sort_keys=False)


def unified_diff(user_text: str, recommended: str, *, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            user_text.splitlines(keepends=True),
            recommended.splitlines(keepends=True),
            fromfile=name,
            tofile=f"{name} (recommended)",
        )
    )
