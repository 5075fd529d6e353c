"""Execute (agent): validation of an absolute executor target received over HTTP (pure)."""

from __future__ import annotations

import json


class TargetError(ValueError):
    """An invalid target; the message says why and nothing was changed."""


class TargetRefused(RuntimeError):
    """A valid target the agent will not apply in the job's mode, or that Spark declined; nothing was changed."""


def parse_target(body: bytes, *, min_executors: int, max_executors: int) -> int:
    """The integer target of a JSON body `{"target": n}`, within [min_executors, max_executors]."""
    try:
        payload = json.loads(body.decode("utf-8") or "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TargetError(f"body is not JSON: {exc}") from None
    except RecursionError:  # e.g. 4,000 nested brackets: the parser recurses per level
        raise TargetError("body is nested too deeply") from None
    if not isinstance(payload, dict) or "target" not in payload:
        raise TargetError('expected a JSON object {"target": <integer>}')
    return validate_target(payload["target"], min_executors=min_executors, max_executors=max_executors)


def validate_target(value: object, *, min_executors: int, max_executors: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TargetError(f"target must be an integer, got {value!r}")
    if value < 0:
        raise TargetError(f"target must not be negative, got {value}")
    if value < min_executors:
        raise TargetError(f"target {value} is below the configured minimum of {min_executors} executors")
    if value > max_executors:
        raise TargetError(f"target {value} is above the configured maximum of {max_executors} executors")
    return value
