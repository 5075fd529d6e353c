"""Monitor: turns the outside world into one Observation per tick (files today; Prometheus next)."""
