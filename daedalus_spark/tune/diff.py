"""Tuning (pure core): the recommended config as the user's own YAML with the changed keys edited, and the diff."""

from __future__ import annotations

import copy
import difflib
import re
from typing import Any

import yaml


def changed_knobs(knobs: dict[str, Any], current: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The knobs (YAML path -> value) whose value differs from the effective config's (`current`, as plain data)."""
    out = {}
    for path, value in knobs.items():
        section, _, key = path.partition(".")
        if current.get(section, {}).get(key) != value:
            out[path] = value
    return out


def scalar(value: Any) -> str:
    """A value as one line of YAML."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16).strip()
    return text.removesuffix("...").strip()


def _edit(lines: list[str], section: str, key: str, value: Any) -> list[str]:
    """The lines with `section:` / `key:` set to value: in place (comment kept), or added to the section."""
    head = next((i for i, line in enumerate(lines) if re.match(rf"{re.escape(section)}:\s*(#.*)?$", line)), None)
    if head is None:
        return [*lines, f"{section}:", f"  {key}: {scalar(value)}"]
    end = next(
        (i for i in range(head + 1, len(lines)) if re.match(r"\S", lines[i]) and not lines[i].startswith("#")),
        len(lines),
    )
    pattern = re.compile(rf"(\s+){re.escape(key)}:(\s*)([^#]*?)(\s*#.*)?$")
    for i in range(head + 1, end):
        m = pattern.fullmatch(lines[i])
        if m:
            return [*lines[:i], f"{m.group(1)}{key}: {scalar(value)}{m.group(4) or ''}", *lines[i + 1 :]]
    indents = (re.match(r"\s+(?=\S)", lines[i]) for i in range(head + 1, end))
    indent = next((m.group(0) for m in indents if m), "  ")
    return [*lines[: head + 1], f"{indent}{key}: {scalar(value)}", *lines[head + 1 :]]


def recommended_yaml(user_text: str, changes: dict[str, Any]) -> str:
    """The user's YAML with `changes` (YAML path -> value) applied, comments and order kept; when the file's layout
    defeats the line edit (flow style, anchors), the parsed data with the changes, dumped."""
    if not changes:
        return user_text
    lines = user_text.splitlines()
    for path, value in changes.items():
        section, _, key = path.partition(".")
        lines = _edit(lines, section, key, value)
    text = "\n".join(lines) + "\n"
    expected = copy.deepcopy(yaml.safe_load(user_text) or {})
    for path, value in changes.items():
        section, _, key = path.partition(".")
        expected.setdefault(section, {})
        expected[section] = {**(expected[section] or {}), key: value}
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
