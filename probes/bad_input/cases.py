"""The bad-input probe's cases, by what they feed bad input to; `cases()` lists them all in the probe's order."""

from __future__ import annotations

from bad_input.commands import (
    csv_pair,
    decision_log_into,
    forecast_scale,
    forecast_scale_check,
    sidecar,
    symlink_out,
    validate,
    validate_text,
)
from bad_input.endpoint import answered_200, health_under_slow_clients, http_request, scrape_target
from bad_input.harness import PASSWORD, SECRET, Case, base, cli, write
from bad_input.runtime import (
    dry_run_check,
    dry_run_count,
    secret_in_records,
    store_fails_mid_run,
    token_check,
    token_with_newline,
)
from bad_input.stored import (
    DAMAGE,
    component_field,
    mentions,
    not_holding_cooldown,
    report_on,
    resume_then_tick,
    saved_store,
)

REFUSE, ACCEPT, EITHER = "refuse", "accept", "either"  # what a case expects (Case.expect)
NUL = "k\x00.sqlite"


def config_limit_cases() -> list[Case]:
    """Configs that validate but cannot run: unusable paths, PromQL that cannot parse, limits that disagree."""
    return [
        Case("config/nul-knowledge-path", validate(controller={"knowledge_path": NUL}), REFUSE, ("knowledge_path",)),
        Case("config/nul-decision-log", validate(runtime={"decision_log": "d\x00.jsonl"}), REFUSE, ("decision_log",)),
        Case("config/nul-ca-file", validate(monitor={"ca_file": "ca\x00.pem"}), REFUSE, ("ca_file",)),
        Case(
            "config/step-longer-than-loop",
            validate(monitor={"step_s": 30}, controller={"loop_interval_s": 10}),
            REFUSE,
            ("step_s",),
        ),
        Case(
            "config/promql-unbalanced",
            validate(
                monitor={"prometheus_url": "http://p:9090", "scrape_interval_s": 1, "query_lag": "sum(rate(x[5m]"}
            ),
            REFUSE,
            ("query_lag",),
        ),
        Case(
            "config/promql-garbage",
            validate(
                monitor={"prometheus_url": "http://p:9090", "scrape_interval_s": 1, "query_uptime": "max by (a b) (x)"}
            ),
            REFUSE,
            ("query_uptime",),
        ),
        Case(
            "config/promql-unknown-placeholder",
            validate(
                monitor={"prometheus_url": "http://p:9090", "scrape_interval_s": 1, "query_lag": "sum(lag{$selectr})"}
            ),
            REFUSE,
            ("$selectr",),
        ),
        Case("config/queries-in-scrape-mode", validate(monitor={"query_lag": "sum(my_lag)"}), REFUSE, ("query_lag",)),
        Case(
            "config/max-scaleout-above-agent",
            validate(controller={"max_scaleout": 40}),
            REFUSE,
            ("agent.max_executors",),
        ),
        Case("config/empty-metrics-host", validate(runtime={"metrics_host": ""}), REFUSE, ("metrics_host",)),
    ]


def config_address_cases() -> list[Case]:
    """Configs with addresses that carry secrets or extras, bad Kubernetes names, numbers in exponent form."""
    return [
        Case(
            "config/url-userinfo",
            validate(monitor={"prometheus_url": f"http://u:{PASSWORD}@p:9090", "scrape_interval_s": 1}),
            REFUSE,
            ("user",),
            secrets=(PASSWORD,),
        ),
        Case("config/url-query", validate(monitor={"scrape_urls": ["http://a:9095/metrics?x=1"]}), REFUSE, ("query",)),
        Case("config/url-fragment", validate(actuator={"agent_url": "http://a:9095#top"}), REFUSE, ("fragment",)),
        Case("config/k8s-name", validate(kubernetes={"name": "Spark_Worker"}), REFUSE, ("kubernetes.name",)),
        Case("config/k8s-namespace", validate(kubernetes={"namespace": "team a"}), REFUSE, ("namespace",)),
        Case(
            "config/k8s-selector",
            validate(kubernetes={"executor_selector": "spark-role=exec/utor"}),
            REFUSE,
            ("executor_selector",),
        ),
        Case(
            "config/k8s-selector-bad-key",
            validate(kubernetes={"executor_selector": "-role=exec"}),
            REFUSE,
            ("executor_selector",),
        ),
        Case(
            "config/exponent-6e2",
            validate_text("controller:\n  loop_interval_s: 6e2\n"),
            ACCEPT,
            check=lambda o: "" if "loop_interval_s: 600" in o.out else "6e2 not read as 600",
        ),
        Case(
            "config/exponent-1e308",
            validate_text("controller:\n  target_recovery_s: 1e308\n"),
            REFUSE,
            ("target_recovery_s",),
        ),
        Case("config/exponent-1e1-int", validate_text("controller:\n  max_scaleout: 1e1\n"), REFUSE, ("max_scaleout",)),
        Case("config/good", validate(), ACCEPT),
    ]


def run_path_cases() -> list[Case]:
    """`run` on paths that can never work (refused at start), a good run, and SIGINT at each stage of start-up."""
    return [
        Case(
            "run/knowledge-dev-full",
            sidecar(lambda t: base(t, controller={"knowledge_path": "/dev/full"})),
            REFUSE,
            ("/dev/full",),
        ),
        Case(
            "run/knowledge-dev-null",
            sidecar(lambda t: base(t, controller={"knowledge_path": "/dev/null"})),
            REFUSE,
            ("/dev/null",),
        ),
        Case(
            "run/knowledge-is-directory",
            sidecar(lambda t: base(t, controller={"knowledge_path": str(t)})),
            REFUSE,
            ("directory",),
        ),
        Case(
            "run/knowledge-under-a-file",
            sidecar(lambda t: write(t / "f", "") and base(t, controller={"knowledge_path": str(t / "f/k")})),
            REFUSE,
            ("k",),
        ),
        Case(
            "run/decision-log-missing-dir",
            sidecar(lambda t: base(t, runtime={"decision_log": str(t / "nope" / "d.jsonl")})),
            REFUSE,
            ("decision_log", "d.jsonl"),
        ),
        Case(
            "run/decision-log-is-directory",
            sidecar(lambda t: base(t, runtime={"decision_log": str(t)})),
            REFUSE,
            ("decision",),
        ),
        Case(
            "run/decision-log-into-yaml",
            decision_log_into("c2.yaml", "controller:\n  loop_interval_s: 5\n"),
            REFUSE,
            ("decision",),
        ),
        Case("run/decision-log-foreign-text", decision_log_into("notes.txt", "my notes\n"), REFUSE, ("decision",)),
        Case("run/good", sidecar(life_s=12), ACCEPT),
        *(
            Case(f"run/sigint-after-{t:g}s", sidecar(interrupt_after_s=t), ACCEPT)
            for t in (0.3, 1.0, 2.0, 3.5)  # interpreter, imports, building the sidecar, running
        ),
    ]


def run_environment_cases() -> list[Case]:
    """`run` with what it reads from the environment missing or malformed."""
    return [
        Case(
            "run/job-labels-env-unset",
            sidecar(
                lambda t: base(
                    t,
                    monitor={
                        "prometheus_url": "http://127.0.0.1:1",
                        "scrape_interval_s": 1,
                        "job_labels_env": {"application_id": "NO_SUCH_VAR_X"},
                    },
                )
            ),
            REFUSE,
            ("NO_SUCH_VAR_X",),
        ),
        Case(
            "run/token-file-newline",
            sidecar(
                lambda t: base(
                    t,
                    monitor={
                        "prometheus_url": "http://127.0.0.1:1",
                        "scrape_interval_s": 1,
                        "bearer_token_file": str(write(t / "tok", f"{SECRET}\nsecond line\n")),
                    },
                )
            ),
            REFUSE,
            ("bearer_token",),
        ),
    ]


def runtime_cases() -> list[Case]:
    """The runtime in-process: a store that fails mid-run, secrets in actuations, the dry run's count."""
    return [
        Case("runtime/store-locked-mid-run", store_fails_mid_run("locked"), REFUSE, ("not",)),
        Case("runtime/store-directory-mid-run", store_fails_mid_run("directory"), REFUSE, ("not",)),
        Case("runtime/store-dir-gone-mid-run", store_fails_mid_run("gone"), REFUSE, ("not",)),
        Case("runtime/agent-token-trailing-newline", token_with_newline, ACCEPT, check=token_check),
        Case("runtime/secret-in-failed-actuation", secret_in_records, ACCEPT),
        Case("runtime/dry-run-executor-count", dry_run_count, ACCEPT, check=dry_run_check),
    ]


def store_cases() -> list[Case]:
    """The controller resumed from a damaged store (every decision row damaged alike)."""
    return [
        *(
            Case(f"store/{name}", resume_then_tick(make), EITHER, names, check=mentions(names[0]))
            for name, make, names in DAMAGE
        ),
        Case(
            "store/last-rescale-future",
            resume_then_tick(component_field("controller", "last_rescale_s", 4_000_000_000.0)),
            EITHER,
            ("last_rescale_s",),
            check=lambda o: not_holding_cooldown(o) or mentions("last_rescale_s")(o),
        ),
        Case(
            "store/last-rescale-string",
            resume_then_tick(component_field("controller", "last_rescale_s", "x")),
            EITHER,
            ("last_rescale_s",),
            check=mentions("last_rescale_s"),
        ),
    ]


def report_cases() -> list[Case]:
    """`report` on the same damage, and on its own options."""
    return [
        *(
            Case(f"report/{name}", report_on(make), EITHER, names, check=mentions(names[0]))
            for name, make, names in DAMAGE
        ),
        Case(
            "report/last-rescale-future",
            report_on(component_field("controller", "last_rescale_s", 4_000_000_000.0)),
            EITHER,
            ("last_rescale_s",),
            check=mentions("last_rescale_s", "ahead"),
        ),
        Case(
            "report/json-out-together",
            lambda t: cli("report", "--knowledge", str(saved_store(t)), "--json", "--out", str(t / "o")),
            REFUSE,
            ("--json", "--out"),
        ),
        Case("report/out-symlink", symlink_out, ACCEPT),
        Case("report/good", report_on(lambda t: saved_store(t)), ACCEPT),
        Case(
            "report/missing-file",
            lambda t: cli("report", "--knowledge", str(t / "none.sqlite")),
            REFUSE,
            ("none.sqlite",),
        ),
    ]


def endpoint_cases() -> list[Case]:
    """The sidecar's HTTP endpoint, and unbounded reads from a scrape target."""
    return [
        Case("http/healthz-with-4-stalled", health_under_slow_clients(4), ACCEPT, check=answered_200),
        Case("http/healthz-with-20-stalled", health_under_slow_clients(20), ACCEPT, check=answered_200),
        Case("http/healthz-with-200-stalled", health_under_slow_clients(200), ACCEPT, check=answered_200),
        Case("http/garbage-request-line", http_request(b"\x00\x01garbage\r\n\r\n", (400,)), REFUSE, ("HTTP 400",)),
        Case(
            "http/huge-header",
            http_request(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n", (400, 413, 431)),
            REFUSE,
            ("HTTP 4",),
        ),
        Case(
            "http/post-metrics",
            http_request(b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", (405, 501)),
            REFUSE,
            ("HTTP 405", "HTTP 501"),
        ),
        Case(
            "http/path-traversal",
            http_request(b"GET /../../etc/passwd HTTP/1.1\r\n\r\n", (404,)),
            REFUSE,
            ("HTTP 404",),
        ),
        Case("http/healthz-query", http_request(b"GET /healthz?x=1 HTTP/1.1\r\n\r\n", (200,)), ACCEPT),
        Case("scrape/64MB-body", scrape_target("huge"), REFUSE, ("MB", "large", "bytes")),
        Case("scrape/trickling-target", scrape_target("trickle"), REFUSE, ("2 s", "timeout", "longer")),
    ]


def other_cases() -> list[Case]:
    """`capacity`, `forecast` and `simulate` on odd input."""
    return [
        Case("capacity/empty-executor-name", csv_pair("time,,e2"), REFUSE, ("column", "name")),
        Case("capacity/blank-executor-name", csv_pair("time,  ,e2"), REFUSE, ("column", "name")),
        Case("forecast/scale-invariance", forecast_scale, ACCEPT, check=forecast_scale_check),
        Case("simulate/bad-policy", lambda t: cli("simulate", "--policies", "nope"), REFUSE, ("nope", "policy")),
    ]


def cases() -> list[Case]:
    return [
        *config_limit_cases(),
        *config_address_cases(),
        *run_path_cases(),
        *run_environment_cases(),
        *runtime_cases(),
        *store_cases(),
        *report_cases(),
        *endpoint_cases(),
        *other_cases(),
    ]
