"""Analyze: a new application under the same job — the driver restarted (new application id, uptime back at 0).

Where the monitor names the application (`Observation.application_id`), a change of id is a new application and
the same id never is, whatever the uptime does or however recent our last rescale. The last id seen is kept in the
knowledge, so a controller restarted together with the driver notices the new application on its first tick.

Without ids on both sides, the uptime decides: it only grows while the same driver runs (or stays put where the
monitor caps it, as the native queries do at 1 h) and falls when a new driver starts. It also falls after a rescale
of ours where a rescale restarts the job (stop and restart from the checkpoint, as the simulator's continuous engine
does): a job that started again within `restart_within_s` of our last rescale (twice the longer learned downtime and
a loop interval) is that rescale, not a new application.
The controller then drops what belonged to the old application (`Controller._forget_old_application`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from daedalus_spark.domain import Observation

# Uptime is sampled at the monitor's step: a fall of less than a few steps is jitter, not a new application.
_JITTER_STEPS = 3.0


@dataclass
class ApplicationWatch:
    """Remembers the last application id (restored from the knowledge) and the last uptime seen (memory only)."""

    application_id: str = ""  # '' = none seen
    uptime_s: float | None = None

    def new_application(self, obs: Observation, *, last_rescale_s: float | None, restart_within_s: float) -> str:
        """Why this observation is of a new application ('' when it is not, or on the first look)."""
        previous_id = self.application_id
        if obs.application_id:
            self.application_id = obs.application_id
        fell = self._uptime_fell(obs, last_rescale_s=last_rescale_s, restart_within_s=restart_within_s)
        if previous_id and obs.application_id:
            changed = previous_id != obs.application_id
            return f"the application id changed from {previous_id} to {obs.application_id}" if changed else ""
        return f"the job's uptime fell to {obs.uptime_s:.0f} s" if fell else ""

    def _uptime_fell(self, obs: Observation, *, last_rescale_s: float | None, restart_within_s: float) -> bool:
        """Whether the uptime fell since the last observation, not by our own last rescale (the first one: False)."""
        if not math.isfinite(obs.uptime_s):
            return False
        previous, self.uptime_s = self.uptime_s, obs.uptime_s
        if previous is None or obs.uptime_s >= previous - _JITTER_STEPS * max(obs.step_s, 1.0):
            return False
        started_s = obs.time_s - obs.uptime_s
        return last_rescale_s is None or not (last_rescale_s <= started_s <= last_rescale_s + restart_within_s)
