"""Demo: the whole loop on a real local Spark cluster (`daedalus-spark demo`), and the harness it shares with tests."""
