# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-spark test-demo kafka-jars k8s-bins jvm-plugin lint typecheck bench bench-spark clean preflight

# What the targets need from the machine, checked first: one line naming what is missing and how to get it.
preflight:
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) else f"make: daedalus-spark needs Python >= 3.11; $(PYTHON) is {v.major}.{v.minor} (make PYTHON=python3.11 ...)")'
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null \
		|| { echo "make: $(PYTHON) has no venv module with ensurepip (Debian: apt-get install python3-venv)"; exit 1; }
	@command -v java >/dev/null \
		|| { echo "make: no java on PATH: Spark and Kafka need Java 17 or later (Debian: apt-get install openjdk-17-jre-headless)"; exit 1; }
	@java -version 2>&1 | awk -F'"' '/version/ { split($$2, v, "."); if (v[1] + 0 < 17) { print "make: Java " $$2 " found; Spark and Kafka need Java 17 or later"; exit 1 } }'

$(BIN)/daedalus-spark: pyproject.toml constraints.txt | preflight
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

# Spark's Kafka connector (at PySpark's version) and a Kafka broker, fetched by Maven (deploy/jars/) into
# ~/.cache/daedalus-spark/<what>-<version>/ ($$DAEDALUS_SPARK_CACHE); a second run finds them there and does nothing.
kafka-jars: $(BIN)/daedalus-spark
	$(BIN)/python -m daedalus_spark.kafkacluster.jars

# etcd, kube-apiserver and kubectl built with Go from the module proxy (the Kubernetes tests start a real API server)
# into ~/.cache/daedalus-spark/<what>-<version>/: ~6 min on 2 cores the first time (README), nothing after.
k8s-bins: $(BIN)/daedalus-spark
	$(BIN)/python -m daedalus_spark.kubecluster.bins

# The agent as a Spark driver plugin (jvm/), built by Maven for Spark 3.5 and 4.x, and a Spark 3.5 runtime (PySpark's
# distribution) to test it on, into the same cache keyed by version and source digest; a second run does nothing.
jvm-plugin: $(BIN)/daedalus-spark
	$(BIN)/python -m daedalus_spark.sparkcluster.plugin

demo: preflight $(BIN)/daedalus-spark kafka-jars
	$(BIN)/daedalus-spark demo

test: preflight $(BIN)/daedalus-spark kafka-jars k8s-bins jvm-plugin
	$(BIN)/python -m pytest -q -m "not demo"

test-spark: $(BIN)/daedalus-spark kafka-jars k8s-bins jvm-plugin
	$(BIN)/python -m pytest -q -m "spark and not demo"

# The whole live demo as a test (12-15 min): `make demo` with its figures checked.
test-demo: preflight $(BIN)/daedalus-spark kafka-jars
	$(BIN)/python -m pytest -q -m demo

# Ruff (lint + format check) and mypy (strict on daedalus_spark/), configured in pyproject.toml.
$(BIN)/ruff: $(BIN)/daedalus-spark
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

lint: $(BIN)/ruff
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/ruff
	$(BIN)/mypy

# Quick figures on the CPU alone, no Spark, Kafka or Prometheus (6 min on this 2-core machine with a load average of
# 2-7): the capacity estimate's error (capacity_accuracy, 2 s), the controller's tick time at 12 and 100 executors
# (tick_speed, 40 s), the simulator's wall time on a 6-h trace (sim_speed, 25-75 s), every policy against the optimum
# on the shortened traces (decision_quality --quick, 40 s idle, 2.5 min busy) and the forecaster against refitted
# auto-ARIMA on 2 h of each trace (forecast_bench --quick, 1.5 min). Each prints its figures; none asserts.
BENCH_CPU := "capacity_accuracy.py" "tick_speed.py --pool process --executors 12 --executors 100" "sim_speed.py" \
	"decision_quality.py --quick" "forecast_bench.py --quick"
bench: $(BIN)/daedalus-spark
	for b in $(BENCH_CPU); do echo "== benchmarks/$$b"; $(BIN)/python benchmarks/$$b || exit 1; done

# The live benchmarks on the local standalone cluster (~1 h, estimated from recorded runs; each stops what it started):
# records/s per pipeline at 1..3 executors (spark_capacity --quick, ~5 min), saturated WordCount on the demo's cluster
# with even and skewed partitions (spark_capacity --experiment saturation, ~8 min), an in-place rescale's cost second
# by second (spark_rescale, ~8 min), Kafka's partition placement at 1-4 executors (kafka_placement, ~10 min), the
# native query set's capacity against the agent's (native_capacity, ~8 min, with a real Prometheus) and a scale-in by
# decommissioning against one by killing (decommission_scale_in, ~10 min, the JVM plugin). The saturation, rescale,
# placement and native runs merge their figures into benchmarks/results/. Not here, run by hand: live_compare (~30 min),
# sim_vs_live (the demo, ~12 min), tune_bench, the Prometheus-only loop_speed and backfill_speed, kafka_produce,
# backfill_warm_start, capacity_tracking, endpoint_load, planning_gap (~50 min); probes/ holds the bad-input and
# reliability probes and the soak.
BENCH_SPARK := "spark_capacity.py --quick" "spark_capacity.py --experiment saturation" "spark_rescale.py" \
	"kafka_placement.py" "native_capacity.py" "decommission_scale_in.py"
bench-spark: $(BIN)/daedalus-spark kafka-jars jvm-plugin
	for b in $(BENCH_SPARK); do echo "== benchmarks/$$b"; $(BIN)/python benchmarks/$$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
