"""Execute: the agent actuator — PUT the absolute executor target to the in-driver agent (the loop confirms it)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark.config import ActuatorConfig
from daedalus_spark.execute.port import Actuation, ActuatorError, Outcome
from daedalus_spark.waiting import retrying


class _Refused(Exception):
    """The agent answered 4xx: retrying will not help."""


@dataclass
class AgentActuator:
    """Talks to the agent's `/executors` (bearer token, timeout, bounded retries with doubling backoff)."""

    settings: ActuatorConfig
    token: str | None = None
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic  # times the request, for the decision log
    _opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(urllib.request.ProxyHandler({})), repr=False
    )

    @property
    def url(self) -> str:
        return self.settings.agent_url.rstrip("/") + "/executors"

    def current(self) -> int:
        try:
            return _live_count(self._with_retries("GET"))
        except (_Refused, OSError, ValueError) as exc:
            raise ActuatorError(f"cannot read the live executors from {self.url}: {exc}") from None

    def apply(self, target: int) -> Actuation:
        started = self.monotonic()
        try:
            answer = self._with_retries("PUT", {"target": target})
        except _Refused as exc:
            return Actuation(target, Outcome.REFUSED, str(exc), duration_s=self.monotonic() - started)
        except (OSError, ValueError) as exc:
            return Actuation(target, Outcome.FAILED, f"{self.url}: {exc}", duration_s=self.monotonic() - started)
        try:
            live: int | None = _live_count(answer)
        except ValueError:
            live = None
        seen = "unknown" if live is None else str(live)
        detail = f"target {target} set, {seen} executors live"
        return Actuation(target, Outcome.ACCEPTED, detail, live, self.monotonic() - started)

    def _with_retries(self, method: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        policy = retrying(self.settings.retries, self.settings.backoff_s, _transient, sleep=self.sleep)
        return policy(self._request, method, body)

    def _request(self, method: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        # The config admits only http(s) URLs for the agent.
        request = urllib.request.Request(self.url, data=data, method=method)  # noqa: S310
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with self._opener.open(request, timeout=self.settings.timeout_s) as response:
                payload = json.loads(response.read(1 << 20) or b"{}")
        except urllib.error.HTTPError as exc:
            message = _error_message(exc)
            if 400 <= exc.code < 500:
                raise _Refused(f"agent refused {method} (HTTP {exc.code}): {message}") from None
            raise OSError(f"agent answered HTTP {exc.code}: {message}") from None
        if not isinstance(payload, dict):
            raise ValueError(f"agent answered {type(payload).__name__}, not a JSON object")
        return payload


def _transient(exc: BaseException) -> bool:
    """A 4xx (_Refused) is final; no answer, a 5xx (OSError) or a garbled answer (ValueError) is tried again."""
    return isinstance(exc, OSError | ValueError)


def _live_count(payload: dict[str, Any]) -> int:
    current = payload.get("current")
    if isinstance(current, bool) or not isinstance(current, int) or current < 0:
        raise ValueError(f"agent reported current={current!r}, not an executor count")
    return current


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        payload = json.loads(exc.read(4096) or b"{}")
    except (OSError, ValueError):
        return exc.reason if isinstance(exc.reason, str) else ""
    return str(payload.get("error", "")) if isinstance(payload, dict) else ""
