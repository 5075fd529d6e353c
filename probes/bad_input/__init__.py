"""The cases of probes/bad_input_probe.py (Monitor, Knowledge, Execute and the CLI fed bad input), by what they feed."""
