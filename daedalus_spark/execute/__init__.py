"""Execute: applies an absolute executor count — the agent actuator, the dry run, and Kubernetes (built by
runtime/wiring.py)."""
