"""Report: capacity, forecast and simulation reports for people (text, HTML) and tools (JSON)."""
