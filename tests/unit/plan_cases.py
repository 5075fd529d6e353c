"""The planners' tables of hand-computed cases (inputs, settings, expected scale-out and reason): each planner's tests
run them, and the evidence tests store every planner's decision over all of them."""

import pytest

from daedalus_spark.config import ControllerConfig, HorizonPlannerConfig
from daedalus_spark.domain import Reason
from tests.unit.plan_inputs import plan_inputs as inputs

# Algorithm 1 (the paper's planner): cases (inputs, settings, target, reason).
PAPER_SETTINGS = ControllerConfig(max_scaleout=12, target_recovery_s=600, checkpoint_interval_s=10)
PAPER_LAG_RULE = PAPER_SETTINGS.model_copy(update={"scale_in_lag_s": 1})  # capacity below the lag defers a scale-in

PAPER_CASES = [
    pytest.param(
        inputs(since_rescale=100, workload=2000),
        PAPER_SETTINGS,
        4,
        Reason.COOLDOWN,
        id="cooldown-holds-even-if-overloaded",
    ),
    pytest.param(
        inputs(since_rescale=300, workload=350),
        PAPER_SETTINGS,
        4,
        Reason.RECENT_RESCALE_STILL_FINE,
        id="recent-rescale-still-fine",
    ),
    pytest.param(
        inputs(since_rescale=300, workload=450),
        PAPER_SETTINGS,
        5,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="recent-rescale-no-longer-fine",
    ),
    pytest.param(
        inputs(since_rescale=300, workload=350, forecast=[350] * 6 + [500] * 84),
        PAPER_SETTINGS,
        4,
        Reason.RECENT_RESCALE_STILL_FINE,
        id="recent-rescale-ignores-peaks-after-next-loop",
    ),
    pytest.param(
        inputs(workload=300, forecast=[340] * 90),
        PAPER_SETTINGS,
        4,
        Reason.CURRENT_IS_SMALLEST_VALID,
        id="current-is-smallest-valid",
    ),
    pytest.param(inputs(workload=450), PAPER_SETTINGS, 5, Reason.SCALE_OUT_SMALLEST_VALID, id="scale-out"),
    pytest.param(inputs(workload=150), PAPER_SETTINGS, 2, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in"),
    pytest.param(
        inputs(workload=150, lag=250),
        PAPER_LAG_RULE,
        3,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="paper-lag-rule-skips-the-smallest-scale-in",
    ),
    pytest.param(
        inputs(workload=150, lag=1000),
        PAPER_LAG_RULE,
        4,
        Reason.SCALE_IN_DEFERRED_LAG,
        id="paper-lag-rule-defers-the-scale-in",
    ),
    # The default: lag up to 60 s of the smaller scale-out's capacity is a micro-batch's own, not a backlog.
    pytest.param(
        inputs(workload=150, lag=1000),
        PAPER_SETTINGS,
        2,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="batch-sized-lag-does-not-defer",
    ),
    pytest.param(
        inputs(workload=150, lag=20000),
        PAPER_SETTINGS,
        4,
        Reason.SCALE_IN_DEFERRED_LAG,
        id="backlog-defers-the-scale-in",
    ),
    pytest.param(inputs(workload=5000), PAPER_SETTINGS, 12, Reason.NO_VALID_SCALEOUT_USE_MAX, id="no-valid-use-max"),
    pytest.param(
        inputs(current=2, workload=250, forecast=[250] * 30 + [650] * 60),
        PAPER_SETTINGS,
        7,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="scale-out-for-the-forecast-peak",
    ),
    pytest.param(
        inputs(workload=150, forecast=[150] * 60 + [390] * 30),
        PAPER_SETTINGS,
        4,
        Reason.CURRENT_IS_SMALLEST_VALID,
        id="no-scale-in-below-the-forecast-peak",
    ),
    # Paper: the current scale-out is kept when valid even if the full forecast peak exceeds it (checked later).
    pytest.param(
        inputs(workload=250, forecast=[250] * 30 + [650] * 60),
        PAPER_SETTINGS,
        4,
        Reason.CURRENT_IS_SMALLEST_VALID,
        id="current-kept-until-the-peak-nears",
    ),
    # 3 executors: 50/s headroom for 2500 replay + 7500 during 30 s down + 30000 lag = 800 s > 600 s;
    # 4 executors: 297 s.
    pytest.param(
        inputs(current=2, workload=250, lag=30000),
        PAPER_SETTINGS,
        4,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="recovery-target-rules-out-small-scaleouts",
    ),
    pytest.param(
        inputs(workload=10),
        PAPER_SETTINGS.model_copy(update={"min_scaleout": 3}),
        3,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="min-scaleout-respected",
    ),
    pytest.param(
        inputs(current=12, workload=150),
        PAPER_SETTINGS.model_copy(update={"max_scaleout": 8}),
        2,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="current-above-max-still-scales-to-smallest",
    ),
    pytest.param(
        inputs(workload=5000),
        PAPER_SETTINGS.model_copy(update={"max_scaleout": 8}),
        8,
        Reason.NO_VALID_SCALEOUT_USE_MAX,
        id="max-scaleout-respected",
    ),
    pytest.param(
        inputs(workload=250, downtime_out=2000),
        PAPER_SETTINGS,
        3,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="keeping-current-judged-as-failure-restart",
    ),
]


# The cost-aware planner: cases (inputs, current scale-out, target, reason).
COST_SETTINGS = ControllerConfig(max_scaleout=12, target_recovery_s=600, checkpoint_interval_s=10, planner="cost_aware")

COST_CASES = [
    # Point forecast 340/s fits 4 executors (400/s); its upper bound 450/s does not.
    pytest.param(
        inputs(workload=300, forecast=[340] * 90, upper=[450] * 90),
        4,
        5,
        Reason.SCALE_OUT_SMALLEST_VALID,
        id="upper-bound-scales-out-where-the-point-forecast-holds",
    ),
    pytest.param(inputs(workload=450), 4, 5, Reason.SCALE_OUT_SMALLEST_VALID, id="scale-out-as-paper"),
    pytest.param(inputs(workload=300, forecast=[340] * 90), 4, 4, Reason.CURRENT_IS_SMALLEST_VALID, id="hold-as-paper"),
    # 4 -> 2 saves 2 * 900 = 1800 executor-s; costs 15 s * 4 + (1500 + 2250) records / 100 per s = 97.5.
    pytest.param(inputs(workload=150), 4, 2, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in-that-pays"),
    # The upper bound (not the point forecast) decides how far to go: 280/s needs 3 executors.
    pytest.param(
        inputs(workload=150, upper=[280] * 90), 4, 3, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in-to-the-upper-bound"
    ),
    # 12-step (120-s) forecast: it cannot show that 2 executors outlast the 180-s cool-down.
    pytest.param(
        inputs(workload=150, steps=12), 4, 4, Reason.SCALE_IN_UNDONE_WITHIN_COOLDOWN, id="undone-within-cooldown"
    ),
    # 4 -> 3 over a 20-step (200-s) forecast saves 200 executor-s; 40 s down costs 160 + (1500 + 6000) / 100 = 235.
    pytest.param(
        inputs(workload=150, steps=20, downtime_in=40, caps=[100, 160, 300, 400] + [100.0 * n for n in range(5, 13)]),
        4,
        4,
        Reason.SCALE_IN_NOT_WORTH_IT,
        id="scale-in-not-worth-it",
    ),
    # The load rose from 150/s back to 320/s within the lookback: past 2 and 3 executors' capacity.
    pytest.param(
        inputs(workload=150, lookback=[150, 320, 150]), 4, 4, Reason.SCALE_IN_RECENTLY_OUTGROWN, id="recently-outgrown"
    ),
    pytest.param(
        inputs(current=6, workload=150, lookback=[150, 320, 150]),
        6,
        4,
        Reason.SCALE_IN_BEST_NET_SAVING,
        id="scale-in-only-to-what-the-load-did-not-outgrow",
    ),
    # The load came back, but only after 600 s below 200/s: 2 * 600 saved > 97.5 for the scale-in + 165 for the
    # scale-out back (30 s * 4 + 150/s * 30 s / 100 per executor-s).
    pytest.param(
        inputs(workload=150, lookback=[150] * 60 + [320, 150]),
        4,
        2,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="outgrown-after-a-dwell-that-pays",
    ),
    # A fall from 500/s is a downslope, not a load that comes back.
    pytest.param(
        inputs(current=6, workload=150, lookback=[500, 400, 300, 150]),
        6,
        2,
        Reason.SCALE_IN_SMALLEST_VALID,
        id="downslope-scales-in",
    ),
    pytest.param(
        inputs(workload=2000, since_rescale=100), 4, 4, Reason.COOLDOWN, id="cooldown-as-paper-even-if-overloaded"
    ),
    # The rescale budget holds scale-ins only: a scale-in waits for a whole token, a scale-out goes even in debt.
    pytest.param(
        inputs(workload=150, tokens=0.99), 4, 4, Reason.SCALE_IN_RESCALE_BUDGET, id="scale-in-waits-for-a-token"
    ),
    pytest.param(inputs(workload=150, tokens=1.0), 4, 2, Reason.SCALE_IN_SMALLEST_VALID, id="scale-in-with-a-token"),
    pytest.param(
        inputs(workload=450, tokens=-2.0), 4, 5, Reason.SCALE_OUT_SMALLEST_VALID, id="scale-out-never-waits-for-budget"
    ),
]


# The horizon planner: cases (inputs, settings, target, reason).
# 100 records/s per executor, 60-s loop, 600-s target, 10-s checkpoints (replay: 10 s of the recent load), no budget;
# a 1-s latency objective: caught up = the backlog within a second of capacity.
HORIZON_SETTINGS = ControllerConfig(
    max_scaleout=12,
    target_recovery_s=600,
    target_latency_s=1,
    checkpoint_interval_s=10,
    loop_interval_s=60,
    cooldown_s=180,
    max_rescales_per_hour=0,
    planner="horizon",
    horizon=HorizonPlannerConfig(target_share_ratio=1.0, upper_weight_ratio=1.0),
)
BUDGET = HORIZON_SETTINGS.model_copy(update={"max_rescales_per_hour": 3})


def steps(*runs: tuple[float, int]) -> list[float]:
    """A forecast of 10-s steps: (value, seconds) runs."""
    return [v for v, seconds in runs for _ in range(seconds // 10)]


HORIZON_CASES = [
    # 250/s fits 3 executors; nothing in the forecast needs more.
    pytest.param(
        inputs(workload=250), HORIZON_SETTINGS, 3, Reason.PLAN_SCALES_IN, id="flat-load-scales-in-to-the-smallest"
    ),
    # A 60-s dip to 150/s: a scale-in to 2 at second 0 has not recovered (15 s down, 1,500 + 5,250 records at
    # 50/s spare) by second 60, when 350/s needs 4 again, so the plan holds through it.
    pytest.param(
        inputs(workload=350, forecast=steps((150, 60), (350, 840))),
        HORIZON_SETTINGS,
        4,
        Reason.PLAN_HOLDS,
        id="holds-through-a-dip-the-forecast-says-is-short",
    ),
    # 300/s now, 700/s from second 60: holding 4 (400/s) would fall behind at 60, so it scales out now; 7 carries
    # 700/s and works off the 30-s downtime's 9,000 + 3,000 replayed records by second 60 (400/s spare).
    pytest.param(
        inputs(workload=300, forecast=steps((300, 60), (700, 840))),
        HORIZON_SETTINGS,
        7,
        Reason.PLAN_SCALES_OUT,
        id="scales-out-ahead-of-a-forecast-ramp",
    ),
    # 150/s fits 2, but 100,000 records of lag: at 3 (150/s spare) they take (100,000 + 15 x 150 + 1,500) / 150 =
    # 692 s > 600; at 4 (250/s spare) 400 s. It holds.
    pytest.param(
        inputs(workload=150, lag=100_000), HORIZON_SETTINGS, 4, Reason.PLAN_HOLDS, id="never-below-what-the-lag-needs"
    ),
    # Without the lag the same load goes to 2.
    pytest.param(
        inputs(workload=150), HORIZON_SETTINGS, 2, Reason.PLAN_SCALES_IN, id="same-load-without-lag-scales-in"
    ),
    # 200,000 records of lag: holding 4 (250/s spare) takes 800 s > 600. Scaling out now is not needed yet: 4 for
    # 240 s leaves 140,000, and 6 from then ((140,000 + 4,500 down + 1,500 replay) / 450 + 30 = 354 s) is done by
    # second 594. It holds now, with the scale-out in its plan (re-planned every tick).
    pytest.param(
        inputs(workload=150, lag=200_000), HORIZON_SETTINGS, 4, Reason.PLAN_HOLDS, id="lag-needs-a-scale-out-in-time"
    ),
    # The budget has 0.2 tokens: 0.2 + 3 x 900 / 3600 = 0.95, no rescale over the horizon, so no scale-in.
    pytest.param(inputs(workload=150, tokens=0.2), BUDGET, 4, Reason.PLAN_HOLDS, id="budget-spent-holds"),
    pytest.param(inputs(workload=150, tokens=1.0), BUDGET, 2, Reason.PLAN_SCALES_IN, id="budget-left-scales-in"),
    # Safety before budget: no rescale allowed, but 450/s does not fit 4; the schedule with one scale-out beyond
    # the budget decides (a scale-out never waits for a token), not Algorithm 1.
    pytest.param(
        inputs(workload=450, tokens=0.0), BUDGET, 5, Reason.PLAN_SCALES_OUT, id="budget-spent-still-scales-out"
    ),
    # 1,500/s is more than 12 executors carry: no schedule; Algorithm 1 says use the maximum.
    pytest.param(
        inputs(workload=1500), HORIZON_SETTINGS, 12, Reason.NO_VALID_SCALEOUT_USE_MAX, id="load-above-max-uses-max"
    ),
    pytest.param(inputs(workload=150, since_rescale=60), HORIZON_SETTINGS, 4, Reason.COOLDOWN, id="cooldown"),
    # A forecast falling to 0 after a minute: 1 executor works the minute's 21,000 extra records off in time, but
    # the first step always carries the 450/s observed now: 5.
    pytest.param(
        inputs(current=8, workload=450, forecast=steps((450, 60), (0, 840))),
        HORIZON_SETTINGS,
        5,
        Reason.PLAN_SCALES_IN,
        id="scale-in-carries-the-load-now",
    ),
    pytest.param(
        inputs(current=2, workload=450, forecast=steps((450, 60), (0, 840))),
        HORIZON_SETTINGS,
        5,
        Reason.PLAN_SCALES_OUT,
        id="scale-out-carries-the-load-now",
    ),
    # Provisioning must also work off the rescale's own backlog (30 s down + 10 s replayed) within the target: at
    # the upper bound (900/s) 9 executors have no spare capacity, 10 have 100/s; at the point forecast (500/s) 5
    # have none, 6 have 100/s.
    pytest.param(
        inputs(workload=500, upper=[900] * 90), HORIZON_SETTINGS, 10, Reason.PLAN_SCALES_OUT, id="upper-bound-weight-1"
    ),
    pytest.param(
        inputs(workload=500, upper=[900] * 90),
        HORIZON_SETTINGS.model_copy(
            update={"horizon": HorizonPlannerConfig(target_share_ratio=1.0, upper_weight_ratio=0.0)}
        ),
        6,
        Reason.PLAN_SCALES_OUT,
        id="point-forecast-weight-0",
    ),
    # An upper bound above what 12 carry (1,200/s): planned at 95 % of that (1,140/s), which needs 12 now.
    pytest.param(
        inputs(workload=500, upper=[5000] * 90),
        HORIZON_SETTINGS,
        12,
        Reason.NO_VALID_SCALEOUT_USE_MAX,
        id="unreachable-bound-capped",
    ),
    # Above max only later: hold now (4 carries 300/s), the plan reaches 12 in time for the overload.
    pytest.param(
        inputs(workload=300, forecast=steps((300, 300), (5000, 600))),
        HORIZON_SETTINGS,
        4,
        Reason.PLAN_HOLDS,
        id="overload-later-is-planned-at-max",
    ),
]
