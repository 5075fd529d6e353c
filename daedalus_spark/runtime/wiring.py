"""Runtime: the composition root — builds the monitor, actuator, store, controller and publishers the config names,
and hands them, built, to the sidecar."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from daedalus_spark.clock import Clock, SystemClock
from daedalus_spark.config import Config
from daedalus_spark.controller import Controller
from daedalus_spark.execute.port import Actuator
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.loop import Loop, Publisher
from daedalus_spark.monitor.port import MAX_WINDOW_INTERVALS, MetricsSource
from daedalus_spark.redact import bearer_token, redact_logs
from daedalus_spark.runtime.publishers import ControllerMetrics, DecisionLog, LogPublisher
from daedalus_spark.runtime.refit_scheduler import PoolRefits
from daedalus_spark.runtime.refits import refit_pool
from daedalus_spark.runtime.sidecar import Sidecar

if TYPE_CHECKING:
    from daedalus_spark.execute.agent import AgentActuator


def build_sidecar(config: Config, *, dry_run: bool, environ: Mapping[str, str]) -> Sidecar:
    """The sidecar with the monitor, actuator and publishers the config names (environment passed in by the caller).

    In a driver pod on Kubernetes (the pod name in `kubernetes.pod_name_env`), the agent actuator also watches the
    executor pods, so targets that stay Pending are reported unreachable, and rescales become Kubernetes Events. In
    advisor mode (`--dry-run`, or actuator.kind dry_run) nothing is actuated and the decided rescales become
    RescaleRecommended events, on the same object.
    """
    redact_logs()
    clock = SystemClock()
    actuator, publishers = on_kubernetes(
        config, make_actuator(config, dry_run=dry_run, environ=environ), dry_run=dry_run, environ=environ
    )
    return assemble_sidecar(
        config, make_monitor(config, clock, environ), actuator, clock=clock, extra_publishers=publishers
    )


def assemble_sidecar(
    config: Config,
    monitor: MetricsSource,
    actuator: Actuator,
    *,
    clock: Clock | None = None,
    extra_publishers: Sequence[Publisher] = (),
) -> Sidecar:
    """The sidecar around built monitor and actuator: the decision log checked, the knowledge store opened, the
    controller resumed from it and saved at once (a store that cannot be written is refused now, not at the first
    rescale), the refit pool started when the config asks for background refits."""
    clock = clock if clock is not None else SystemClock()
    decision_log = DecisionLog(
        config.runtime.decision_log,
        max_bytes=config.knowledge.decision_log_max_bytes,
        backups=config.knowledge.decision_log_backups,
    )
    decision_log.check()
    store = SqliteKnowledgeStore(config.controller.knowledge_path, retention=config.knowledge)
    # Spawned, not forked: this process already runs threads (scheduler, HTTP, queries).
    refits = refit_pool() if config.forecast.background_refit else None
    try:
        controller = Controller.resume(
            config, store, refits=None if refits is None else PoolRefits(refits), now_s=clock.now()
        )
        controller.save(store)
    except BaseException:
        if refits is not None:
            refits.shutdown(wait=False, cancel_futures=True)
        raise
    metrics = ControllerMetrics(controller)
    publishers: list[Publisher] = [decision_log, LogPublisher(), metrics, *extra_publishers]
    loop = Loop(controller, monitor, actuator, store, clock, publishers)
    return Sidecar(config, loop, store, metrics=metrics, refits=refits)


def make_monitor(config: Config, clock: Clock, environ: Mapping[str, str] | None = None) -> MetricsSource:
    """A PrometheusMonitor when `monitor.prometheus_url` is set (job labels and token from `environ`), else a
    started ScrapeMonitor of `scrape_urls`."""
    signal = config.controller.utilization_signal
    if config.monitor.prometheus_url:
        from daedalus_spark.monitor.prometheus import PrometheusMonitor

        return PrometheusMonitor(config.monitor, signal, environ)
    from daedalus_spark.monitor.scrape import ScrapeMonitor

    horizon_s = MAX_WINDOW_INTERVALS * config.controller.loop_interval_s + config.monitor.step_s
    monitor = ScrapeMonitor(config.monitor, signal, clock, horizon_s=horizon_s)
    monitor.start()
    return monitor


def make_actuator(config: Config, *, dry_run: bool, environ: Mapping[str, str]) -> Actuator:
    """The actuator the config asks for; `--dry-run` overrides it with the advisor."""
    if dry_run or config.actuator.kind == "dry_run":
        from daedalus_spark.execute.dry_run import DryRunActuator

        # Beside an agent, the live count is read from it (a GET changes nothing); otherwise it stays unknown.
        reader = _agent(config, environ) if config.actuator.kind == "agent" else None
        return DryRunActuator(read_live=None if reader is None else reader.current)
    if config.actuator.kind == "kubernetes":
        require_kubernetes_client("actuator.kind kubernetes")
        from daedalus_spark.execute.kubernetes_scale import make_kubernetes_actuator

        return make_kubernetes_actuator(config, environ)
    return _agent(config, environ)


def on_kubernetes(
    config: Config, actuator: Actuator, *, dry_run: bool, environ: Mapping[str, str]
) -> tuple[Actuator, list[Publisher]]:
    """The actuator and the extra publishers for where the sidecar runs: off Kubernetes, the actuator as it is and
    none. On it (actuator.kind kubernetes, or a pod), an agent that actuates also watches the executor pods, and the
    rescales (recommended ones in advisor mode) become Events on the scaled object or the driver's owner."""
    advisor = dry_run or config.actuator.kind == "dry_run"
    if not (config.actuator.kind == "kubernetes" or environ.get(config.kubernetes.pod_name_env)):
        return actuator, []
    in_pod = f"running in a pod (${config.kubernetes.pod_name_env} is set)"
    require_kubernetes_client("actuator.kind kubernetes" if config.actuator.kind == "kubernetes" else in_pod)
    from daedalus_spark.execute.kubernetes_pods import PendingAwareActuator, make_pod_watcher
    from daedalus_spark.execute.kubernetes_scale import KubernetesScaleActuator, make_kubernetes_actuator
    from daedalus_spark.runtime.kubernetes_events import make_event_publisher

    scaler = actuator if isinstance(actuator, KubernetesScaleActuator) else None
    if scaler is None and config.actuator.kind == "kubernetes":  # advisor: only read, for the object's uid
        scaler = make_kubernetes_actuator(config, environ)
    if config.actuator.kind == "agent" and not advisor:
        actuator = PendingAwareActuator(actuator, make_pod_watcher(config, environ))
    events = make_event_publisher(config, environ, scaler=scaler)
    return actuator, [events] if events is not None else []


def require_kubernetes_client(why: str) -> None:
    """The Kubernetes client is an extra (the agent and dry-run modes do not need it): say so instead of failing on
    an import deep in a start-up."""
    if importlib.util.find_spec("kubernetes") is None:
        raise ValueError(f"{why} needs the Kubernetes client, not installed: pip install 'daedalus-spark[kubernetes]'")


def _agent(config: Config, environ: Mapping[str, str]) -> AgentActuator:
    from daedalus_spark.execute.agent import AgentActuator

    where = f"actuator.token_env ({config.actuator.token_env})"
    token = bearer_token(environ.get(config.actuator.token_env, ""), where)
    return AgentActuator(config.actuator, token or None)
