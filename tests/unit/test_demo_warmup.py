"""The demo's warm-up: the load just before the cycle, written at once before the query starts, so that its first
batch runs on cold executors before the cycle begins (demo/live.py `_generator_args`)."""

from daedalus_spark.demo.live import DemoPlan, _generator_args


def test_the_warm_up_is_the_load_just_before_the_cycle_written_within_a_second(tmp_path):
    plan = DemoPlan(warmup_s=10)  # 10 wall s at compression 22.5: trace seconds 5,775-6,000
    args = _generator_args(plan, tmp_path, None, warmup=True)
    value = {name: args[args.index(name) + 1] for name in ("--start-s", "--duration-s", "--compression", "--scale")}
    assert value == {"--start-s": "5775", "--duration-s": "225", "--compression": "225", "--scale": "0.0038"}
    cycle = _generator_args(plan, tmp_path, None)
    assert cycle[cycle.index("--start-s") + 1] == "6000" and cycle[cycle.index("--duration-s") + 1] == "10800"


def test_a_warm_up_longer_than_the_trace_before_the_cycle_starts_at_its_first_second(tmp_path):
    args = _generator_args(DemoPlan(trace_start_s=100, warmup_s=10), tmp_path, None, warmup=True)
    assert args[args.index("--start-s") + 1] == "0" and args[args.index("--duration-s") + 1] == "100"
