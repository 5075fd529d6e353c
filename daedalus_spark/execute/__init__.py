"""Execute: applies an absolute worker count (the Kubernetes and agent actuators land here; the agent already takes targets)."""
