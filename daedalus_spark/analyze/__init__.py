"""Analyze: pure models turning observations into capacity, forecasts and recovery times (no I/O)."""
