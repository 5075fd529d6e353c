"""Analyze: executors the job lost by itself (a JVM killed, a worker gone) rather than by a rescale of ours.

Between two ticks the live count falls below both what it was and the target of our last applied rescale: the
cluster manager is still asking for the executors it lost and usually replaces them within seconds. Planning on
that tick would send the target the job already has (the agent's reconciliation and Spark's replacement are under
way), count the replacement as our rescale and time its arrival as that rescale's recovery; so the tick holds, and
the next one, which sees what the cluster did, decides.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LossWatch:
    """Remembers the last live count seen; in memory only."""

    scaleout: int | None = None

    def lost(self, scaleout: int, *, our_target: int | None) -> str:
        """Why this tick should hold ('' when the count did not fall below what we asked for)."""
        previous, self.scaleout = self.scaleout, scaleout
        if previous is None or scaleout >= previous or (our_target is not None and scaleout >= our_target):
            return ""
        return f"executors lost: {previous} -> {scaleout} live without a rescale of ours; waiting for replacements"
