"""Configuration: reading YAML into a model (one line per problem) and rendering the commented reference."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from daedalus_spark.config.fields import OneOf
from daedalus_spark.config.model import Config, planning_warnings
from daedalus_spark.redact import redact


class ConfigError(ValueError):
    """A YAML file that cannot be used; `errors` holds one line per problem, each naming its YAML path."""

    kind = "config"

    def __init__(self, source: str, errors: list[str]) -> None:
        super().__init__(f"{source}: invalid {self.kind}\n" + "\n".join(f"  {e}" for e in errors))
        self.source = source
        self.errors = errors

    def one_line(self) -> str:
        """For a CLI error line: the file, then every problem by YAML path, separated by semicolons."""
        return f"{self.source}: invalid {self.kind}: " + "; ".join(self.errors)


_MAX_CONFIG_BYTES = 1024 * 1024


class StrictYamlLoader(yaml.SafeLoader):
    """safe_load that also refuses duplicate keys (YAML keeps the last silently) and aliases (`*name`)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # PyYAML's stubs leave it untyped
            raise yaml.constructor.ConstructorError(None, None, "aliases (*name) are not allowed here", mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first is not key_node.start_mark:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r:.40} (first at line {first.line + 1})", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) reads 6e2 and 1e308 as strings: it wants a dot and a signed exponent. Read them as YAML 1.2
# and JSON do, as numbers (an int field still refuses 6e2: it is a float).
StrictYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?([0-9][0-9_]*)(\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)


def _walk(data: Any, path: str) -> Any:
    """The value at a YAML path (None where a step is missing; what is there when it is not a mapping)."""
    for part in path.split("."):
        if not isinstance(data, dict):
            return data
        data = data.get(part)
    return data


def _copied_to(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The mapping at `path` in `data`, created or copied so that editing it leaves the caller's data as it was."""
    for part in path.split("."):
        given = data.get(part)
        data[part] = dict(given) if isinstance(given, dict) else {}
        data = data[part]
    return data


def move_keys(data: dict[str, Any], moved: Mapping[str, str], source: str) -> tuple[dict[str, Any], list[str]]:
    """`data` with every moved key's old name (a YAML path of `moved`) read as its new one, each logged as a
    deprecation naming both and `source`; and one error per key given under both names."""
    errors: list[str] = []
    for old, new in moved.items():
        old_section, _, old_key = old.rpartition(".")
        new_section, _, new_key = new.rpartition(".")
        holder, target = _walk(data, old_section), _walk(data, new_section)
        if not isinstance(holder, dict) or old_key not in holder or not isinstance(target, dict | None):
            continue  # not given, or a section is not a mapping: validation says so
        if target is not None and new_key in target:
            errors.append(f"{old} and {new}: both set (the old and the new name of one key): keep only {new}")
            continue
        log.warning("%s: %s is deprecated, write %s (read as it for now)", source, old, new)
        data = dict(data)
        value = _copied_to(data, old_section).pop(old_key)
        _copied_to(data, new_section)[new_key] = value
    return data, errors


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    for part in loc[:-1]:
        info = model.model_fields.get(str(part))
        if info is None or not isinstance(info.annotation, type) or not issubclass(info.annotation, BaseModel):
            return []
        model = info.annotation
    return sorted(model.model_fields)


def _explain(model: type[BaseModel], err: ErrorDetails) -> str:
    path = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        allowed = ", ".join(_allowed_keys(model, err["loc"]))
        return f"{path}: unknown key (allowed here: {allowed})"
    msg = err["msg"].removeprefix("Value error, ")
    got = err.get("input")
    # The value is echoed to say which one was meant, with any password inside a URL masked.
    return f"{path}: {msg} (got {redact(repr(got))})" if err["loc"] and not isinstance(got, dict) else f"{path}: {msg}"


def parse_model(model: type[M], data: Any, source: str, error: type[ConfigError] = ConfigError) -> M:
    """Validate parsed YAML into `model`; every problem becomes one line of `error`."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise error(source, [f"(top level): expected a mapping, got {type(data).__name__}"])
    data, errors = move_keys(data, getattr(model, "MOVED_KEYS", {}), source)
    if errors:
        raise error(source, errors)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(source, [_explain(model, e) for e in exc.errors()]) from None


def load_model(
    model: type[M],
    path: str | Path | None,
    error: type[ConfigError] = ConfigError,
    overlay: dict[str, dict[str, Any]] | None = None,
) -> M:
    """Read a YAML file into `model`; None gives the defaults. `overlay` sets section keys (a command-line option
    standing for a YAML key) before validation, so the file is checked as if it held them."""
    if path is None:
        return parse_model(model, overlay, "config", error) if overlay else model()
    path = Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_CONFIG_BYTES + 1)  # bounded: a config is a few kB, /dev/zero is endless
    except OSError as exc:
        raise error(str(path), [f"cannot read: {exc.strerror}"]) from None
    if len(raw) > _MAX_CONFIG_BYTES:
        raise error(str(path), [f"larger than {_MAX_CONFIG_BYTES // 1024} KiB: not a config file"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{path}:{line}", [f"not UTF-8 text (byte {exc.start}: {raw[exc.start]:#04x})"]) from None
    try:
        data = yaml.load(text, Loader=StrictYamlLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise error(str(path), [f"not valid YAML: {' '.join(str(exc).split())}"]) from None
    except RecursionError:
        raise error(str(path), ["not valid YAML: nested too deeply"]) from None
    if overlay and isinstance(data, dict | None):
        data = dict(data or {})
        for section, values in overlay.items():
            given = data.get(section)
            data[section] = {**(given if isinstance(given, dict) else {}), **values}
    return parse_model(model, data, str(path), error)


def parse_config(data: Any, source: str = "config") -> Config:
    return parse_model(Config, data, source)


def load_config(path: str | Path | None, overlay: dict[str, dict[str, Any]] | None = None) -> Config:
    """Read a YAML config; None gives the defaults (see load_model for `overlay`). What loads but is worth a
    warning (model.planning_warnings) is logged, naming the file."""
    config = load_model(Config, path, overlay=overlay)
    for warning in planning_warnings(config):
        log.warning("%s: %s", path or "default config", warning)
    return config


def _bounds(info: Any) -> str:
    parts = []
    for m in info.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(m, attr, None)
            if value is not None:
                parts.append(f"{sym} {value}")
        if isinstance(m, OneOf):
            parts.append("one of " + ", ".join(m.names()))
    args = getattr(info.annotation, "__args__", None)
    if args and all(isinstance(a, str) for a in args):
        parts.append("one of " + ", ".join(args))
    return ", ".join(parts) or "any"


def key_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key's YAML path in `model`, nested sections walked into (`controller.horizon.upper_weight_ratio`)."""
    paths = []
    for name, info in model.model_fields.items():
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            paths.extend(key_paths(nested, f"{prefix}{name}."))
        else:
            paths.append(prefix + name)
    return paths


def render_yaml(config: Config) -> str:
    """The config as YAML with every field's unit, allowed range and description as a comment."""
    lines = ["# daedalus-spark configuration. Every key is optional; unknown keys are errors."]
    for section_name in Config.model_fields:
        lines.append(f"{section_name}:")
        lines.extend(_render_section(getattr(config, section_name), "  "))
    return "\n".join(lines) + "\n"


def _render_section(section: BaseModel, indent: str) -> list[str]:
    lines = []
    for name, info in type(section).model_fields.items():
        value = getattr(section, name)
        if isinstance(value, BaseModel):  # a nested section: its keys one level in
            lines.append(f"{indent}# {info.description}")
            lines.append(f"{indent}{name}:")
            lines.extend(_render_section(value, indent + "  "))
            continue
        extra = info.json_schema_extra
        unit = extra.get("unit", "-") if isinstance(extra, dict) else "-"
        lines.append(f"{indent}# {info.description} Unit: {unit}. Allowed: {_bounds(info)}.")
        text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16).strip()
        text = text.removesuffix("\n...").removesuffix("...").strip()
        lines.append(f"{indent}{name}: {text}")
    return lines
