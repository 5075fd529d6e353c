"""Runtime: the sidecar that schedules the loop, serves health and metrics, and publishes every decision."""
