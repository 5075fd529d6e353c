# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-spark test-demo kafka-jars k8s-bins jvm-plugin lint typecheck bench clean preflight

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

# The whole live demo as a test (~12 min): `make demo` with its figures checked.
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

bench: $(BIN)/daedalus-spark kafka-jars
	for b in benchmarks/*.py; do [ "$$b" = benchmarks/sparkbench.py ] && continue; echo "== $$b"; $(BIN)/python $$b || exit 1; done  # sparkbench.py: shared helpers

clean:
	rm -rf $(VENV) build *.egg-info
