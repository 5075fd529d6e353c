"""Knowledge: checks for values read back from a store, which may be damaged or written by someone else (pydantic
strict types and bounds; every failure is one `Damaged` line naming where the value was)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict, TypeAdapter, ValidationError

_MAPPING: TypeAdapter[dict[Any, Any]] = TypeAdapter(Annotated[dict[Any, Any], Strict()])
_BOOLEAN: TypeAdapter[bool] = TypeAdapter(Annotated[bool, Strict()])


class Damaged(ValueError):
    """A stored value has the wrong type, is out of range or not finite; the message names it."""


class StoredRecord(BaseModel):
    """A record as a component stored it: strict types (no "4" for 4, no true for 1), finite numbers, keys it does
    not know ignored (a newer writer's additions); read with `record`."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore", frozen=True)


R = TypeVar("R", bound=StoredRecord)
_EXPECTED = {"int_type": "an integer", "float_type": "a number", "bool_type": "true or false", "string_type": "text"}


def record(model: type[R], raw: Any, where: str) -> R:
    """`raw` as `model`; the first problem becomes `Damaged` naming the field (`where.field: ...`), worded as the
    single-value checks below word it."""
    try:
        return model.model_validate(mapping(raw, where))
    except ValidationError as exc:
        err = exc.errors()[0]
        at = ".".join([where, *(str(part) for part in err["loc"])])
        value, kind = err.get("input"), err["type"]
        if kind == "missing":
            raise Damaged(f"{at}: missing") from None
        if kind in _EXPECTED:
            raise Damaged(f"{at}: expected {_EXPECTED[kind]}, got {value!r:.40}") from None
        if kind == "finite_number":
            raise Damaged(f"{at}: {float(value)} is not a finite number") from None
        info = model.model_fields[str(err["loc"][0])]
        lo = next((m.ge for m in info.metadata if hasattr(m, "ge")), -math.inf)
        hi = next((m.le for m in info.metadata if hasattr(m, "le")), math.inf)
        shown = float(value) if info.annotation is float else value
        raise Damaged(f"{at}: {shown} outside [{lo}, {hi}]") from None


@cache
def _integers(lo: int, hi: int) -> TypeAdapter[int]:
    # strict: a stored true/false (bool is an int subclass in Python) or "4" is never a count.
    return TypeAdapter(Annotated[int, Strict(), Field(ge=lo, le=hi)])


@cache
def _numbers(lo: float, hi: float, allow_inf: bool) -> TypeAdapter[float]:
    bounds = Field(ge=None if lo == -math.inf else lo, le=None if hi == math.inf else hi, allow_inf_nan=allow_inf)
    return TypeAdapter(Annotated[float, Strict(), bounds])  # strict: an int is a number, a bool or "1.5" is not


@cache
def _texts(max_len: int) -> TypeAdapter[str]:
    return TypeAdapter(Annotated[str, Strict(), Field(max_length=max_len)])


@cache
def _lists(max_len: int) -> TypeAdapter[list[Any]]:
    return TypeAdapter(Annotated[list[Any], Strict(), Field(max_length=max_len)])


def _failed(exc: ValidationError) -> str:
    """The kind of the first failure: `*_type` (not that type), `finite_number` or a bound."""
    return str(exc.errors()[0]["type"])


def mapping(raw: Any, where: str) -> Mapping[str, Any]:
    try:
        return _MAPPING.validate_python(raw)
    except ValidationError:
        raise Damaged(f"{where}: expected an object, got {type(raw).__name__}") from None


def field(raw: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in raw:
        raise Damaged(f"{where}.{key}: missing")
    return raw[key]


def integer(value: Any, where: str, *, lo: int, hi: int) -> int:
    try:
        return _integers(lo, hi).validate_python(value)
    except ValidationError as exc:
        if _failed(exc) == "int_type":
            raise Damaged(f"{where}: expected an integer, got {value!r:.40}") from None
        raise Damaged(f"{where}: {value} outside [{lo}, {hi}]") from None


def number(value: Any, where: str, *, lo: float = -math.inf, hi: float = math.inf, allow_inf: bool = False) -> float:
    try:
        x = _numbers(lo, hi, allow_inf).validate_python(value)
    except ValidationError as exc:
        failed = _failed(exc)
        if failed == "float_type":
            raise Damaged(f"{where}: expected a number, got {value!r:.40}") from None
        if failed == "finite_number" or math.isnan(value):  # NaN fails a bound first when infinities are allowed
            raise Damaged(f"{where}: {float(value)} is not a finite number") from None
        raise Damaged(f"{where}: {float(value)} outside [{lo}, {hi}]") from None
    if math.isnan(x):  # allowing infinities lets NaN through too
        raise Damaged(f"{where}: {x} is not a finite number")
    return x


def optional_number(value: Any, where: str, **bounds: Any) -> float | None:
    return None if value is None else number(value, where, **bounds)


def boolean(value: Any, where: str) -> bool:
    try:
        return _BOOLEAN.validate_python(value)
    except ValidationError:
        raise Damaged(f"{where}: expected true or false, got {value!r:.40}") from None


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
    try:
        return _texts(max_len).validate_python(value)
    except ValidationError:
        raise Damaged(f"{where}: expected a string of at most {max_len} characters, got {value!r:.40}") from None


def numbers(value: Any, where: str, *, max_len: int, lo: float = -math.inf, hi: float = math.inf) -> list[float]:
    try:
        values = _lists(max_len).validate_python(value)
    except ValidationError:
        raise Damaged(f"{where}: expected a list of at most {max_len} numbers") from None
    return [number(v, f"{where}[{i}]", lo=lo, hi=hi) for i, v in enumerate(values)]
