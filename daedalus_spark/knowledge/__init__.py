"""Knowledge: what the loop has learned, and the stores that keep it across restarts."""
