"""Tuning (offline, what-if): the config's knobs replayed on the user's own workload history by the simulator."""
