"""Simulation: a simulated Spark streaming job, the policies compared on it, and the `simulate` command."""
