"""Report: strict JSON for machines — a value that is not a finite number is written as null, never NaN."""

from __future__ import annotations

import json
import math
from typing import Any


def finite_or_none(value: Any) -> Any:
    """The same structure with every NaN/±inf float replaced by None (JSON null); numpy scalars become floats."""
    if isinstance(value, dict):
        return {str(k): finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    try:
        x = float(value)
    except (TypeError, ValueError):
        return value
    return x if math.isfinite(x) else None


def strict_json(value: Any, *, indent: int | None = 2) -> str:
    """JSON that every parser accepts (`allow_nan=False`)."""
    return json.dumps(finite_or_none(value), indent=indent, allow_nan=False)
