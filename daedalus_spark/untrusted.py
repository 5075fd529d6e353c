"""Knowledge: checks for values read back from a store, which may be damaged or written by someone else."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class Damaged(ValueError):
    """A stored value has the wrong type, is out of range or not finite; the message names it."""


def mapping(raw: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise Damaged(f"{where}: expected an object, got {type(raw).__name__}")
    return raw


def field(raw: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in raw:
        raise Damaged(f"{where}.{key}: missing")
    return raw[key]


def integer(value: Any, where: str, *, lo: int, hi: int) -> int:
    # bool is an int subclass in Python; a stored true/false is never a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise Damaged(f"{where}: expected an integer, got {value!r:.40}")
    if not lo <= value <= hi:
        raise Damaged(f"{where}: {value} outside [{lo}, {hi}]")
    return value


def number(value: Any, where: str, *, lo: float = -math.inf, hi: float = math.inf, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Damaged(f"{where}: expected a number, got {value!r:.40}")
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise Damaged(f"{where}: {x} is not a finite number")
    if not lo <= x <= hi:
        raise Damaged(f"{where}: {x} outside [{lo}, {hi}]")
    return x


def optional_number(value: Any, where: str, **bounds: Any) -> float | None:
    return None if value is None else number(value, where, **bounds)


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise Damaged(f"{where}: expected true or false, got {value!r:.40}")
    return value


def check_version(raw: Mapping[str, Any], where: str, understood: int) -> int:
    """A component's state version: newer than this code understands is refused (absent: 1, written before versions)."""
    version = integer(raw.get("version", 1), f"{where}.version", lo=1, hi=2**31)
    if version > understood:
        raise Damaged(f"{where}: state version {version} is newer than this daedalus-spark understands ({understood})")
    return version


def scaleout_key(key: Any, where: str, *, most: int = 100_000) -> int:
    """A scale-out stored as a JSON object key ("4"): a whole number in 1..most."""
    if not isinstance(key, str) or not key.isdigit() or not 1 <= int(key) <= most:
        raise Damaged(f"{where}: {str(key)[:20]!r} is not a scale-out (a whole number in 1..{most})")
    return int(key)


def text(value: Any, where: str, *, max_len: int = 200) -> str:
    if not isinstance(value, str) or len(value) > max_len:
        raise Damaged(f"{where}: expected a string of at most {max_len} characters, got {value!r:.40}")
    return value


def numbers(value: Any, where: str, *, max_len: int, lo: float = -math.inf, hi: float = math.inf) -> list[float]:
    if not isinstance(value, list) or len(value) > max_len:
        raise Damaged(f"{where}: expected a list of at most {max_len} numbers")
    return [number(v, f"{where}[{i}]", lo=lo, hi=hi) for i, v in enumerate(value)]
