package daedalus.spark.plugin;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Execute/Monitor (JVM agent): the driver side: a listener for the driver's events, the scaler, the HTTP endpoint
 * and a poll thread that applies the initial target and re-applies a target a standalone master overshot.
 */
public final class AgentDriverPlugin implements DriverPlugin, AgentHttp.Agent {
  static final String PREFIX = "daedalus_spark_";
  static final long SURPLUS_GRACE_MS = 30_000;
  private static final Logger LOG = LoggerFactory.getLogger(AgentDriverPlugin.class);

  private AgentConfig config;
  private DriverState state;
  private ExecutorScaler scaler;
  private AgentHttp http;
  private SparkContext sc;
  private long startedMs;
  private String refusal = "";
  private volatile Integer pending;
  private volatile boolean stopped;
  private Thread poller;

  @Override
  public Map<String, String> init(SparkContext sc, PluginContext context) {
    config = AgentConfig.from(sc.getConf(), System.getenv());
    state = new DriverState();
    sc.addSparkListener(state);
    scaler = new ExecutorScaler(sc, state::executors, config.scaleIn());
    this.sc = sc;
    startedMs = sc.startTime();
    refusal = unservableMode(sc.master(), sc.getConf().get("spark.dynamicAllocation.enabled", "false"));
    try {
      http = new AgentHttp(this, config.host(), config.port());
    } catch (IOException e) {
      throw new UncheckedIOException("daedalus agent: cannot listen on " + config.host() + ":" + config.port(), e);
    }
    if (!refusal.isEmpty()) {
      String ignored =
          config.initialTarget() == null ? "" : " (initial target " + config.initialTarget() + " ignored)";
      LOG.warn("daedalus agent refuses executor targets{}: {}", ignored, refusal);
    } else {
      pending = config.initialTarget();
    }
    poller = new Thread(this::loop, "daedalus-agent-poll");
    poller.setDaemon(true);
    poller.start();
    LOG.info("daedalus agent on http://{}:{} (scale-in asked: {})", config.host(), http.port(), config.scaleIn().label());
    return Collections.emptyMap();
  }

  @Override
  public void shutdown() {
    stopped = true;
    if (poller != null) {
      poller.interrupt();
    }
    if (http != null) {
      http.stop();
    }
  }

  /** Why a driver with this master and dynamic allocation setting cannot take targets ('' if it can). */
  static String unservableMode(String master, String dynamicAllocation) {
    if (master.trim().toLowerCase(Locale.ROOT).startsWith("local")) {
      return "the job runs in local mode (master " + master + "): it has no executors to scale; metrics only";
    }
    if (dynamicAllocation.trim().equalsIgnoreCase("true")) {
      return "Spark's dynamic allocation manages the executors (spark.dynamicAllocation.enabled=true); metrics only";
    }
    return "";
  }

  private void loop() {
    long surplusSince = -1;
    while (!stopped) {
      Integer initial = pending;
      if (initial != null && scaler.target() == null) {
        try {
          scaler.apply(initial);
          pending = null;
        } catch (TargetException | RuntimeException e) {
          LOG.debug("daedalus agent: initial target {} not applied yet: {}", initial, e.toString());
        }
      }
      if (refusal.isEmpty()) {
        surplusSince = reconcile(surplusSince, System.currentTimeMillis());
      }
      try {
        Thread.sleep((long) (config.pollSeconds() * 1000));
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** More serving executors than the target for the grace (a master launched one before the target reached it):
   * apply the target again. */
  private long reconcile(long surplusSince, long now) {
    Integer target = scaler.target();
    if (target == null || scaler.current() <= target) {
      return -1;
    }
    if (surplusSince < 0 || now - surplusSince < SURPLUS_GRACE_MS) {
      return surplusSince < 0 ? now : surplusSince;
    }
    try {
      scaler.apply(target);
    } catch (TargetException | RuntimeException e) {
      LOG.warn("daedalus agent: re-applying target {} failed: {}", target, e.toString());
    }
    return -1;
  }

  @Override
  public Map<String, Object> status() {
    List<String> ids = new ArrayList<>();
    scaler.serving().forEach(e -> ids.add(e.id));
    Map<String, Object> status = new LinkedHashMap<>();
    status.put("current", ids.size());
    status.put("target", scaler.target());
    status.put("executors", ids);
    status.put("min", config.minExecutors());
    status.put("max", config.maxExecutors());
    status.put("refusing", refusal);
    status.put("scale_in", scaler.scaleIn().label());
    return status;
  }

  @Override
  public Map<String, Object> apply(int target) throws TargetException {
    if (!refusal.isEmpty()) {
      throw TargetException.refused(refusal);
    }
    List<String> leaving = scaler.apply(target);
    Map<String, Object> answer = new LinkedHashMap<>();
    answer.put("current", scaler.current());
    answer.put("target", target);
    answer.put("leaving", leaving);
    answer.put("scale_in", scaler.scaleIn().label());
    return answer;
  }

  @Override
  public int minExecutors() {
    return config.minExecutors();
  }

  @Override
  public int maxExecutors() {
    return config.maxExecutors();
  }

  @Override
  public String token() {
    return config.token();
  }

  @Override
  public String metrics() {
    Exposition out = new Exposition();
    String appId = String.valueOf(sc.applicationId()); // known once the scheduler has started
    List<DriverState.Executor> executors = state.executors();
    String[] byExecutor = {"application_id", "executor_id"};
    Exposition.Family records =
        out.counter(PREFIX + "executor_records_processed", "Source records read by tasks of the executor", byExecutor);
    executors.forEach(e -> records.add(e.records, appId, e.id));
    records.end();
    Exposition.Family busy =
        out.counter(PREFIX + "executor_busy_seconds", "Task time on the executor (Spark totalDuration)", byExecutor);
    executors.forEach(e -> busy.add(e.busyMs / 1000.0, appId, e.id));
    busy.end();
    Exposition.Family cores = out.gauge(PREFIX + "executor_cores", "Cores of the executor", byExecutor);
    Exposition.Family active = out.gauge(PREFIX + "executor_active_tasks", "Tasks running on the executor", byExecutor);
    for (DriverState.Executor e : executors) {
      if (e.active) {
        cores.add(e.cores, appId, e.id);
        active.add(e.activeTasks, appId, e.id);
      }
    }
    cores.end();
    active.end();
    queryMetrics(out, appId, state.queries());
    out.gauge(PREFIX + "executors", "Live executors (driver excluded)", "application_id")
        .add(scaler.current(), appId)
        .end();
    targetMetric(out, appId, scaler.target());
    out.gauge(PREFIX + "uptime_seconds", "Seconds since the agent started with the app", "application_id")
        .add((System.currentTimeMillis() - startedMs) / 1000.0, appId)
        .end();
    out.counter(PREFIX + "agent_poll_errors", "Failed polls of the driver UI", "application_id").add(0, appId).end();
    return out.text();
  }

  /** The executor target last applied; no sample (not -1) before the first. */
  static void targetMetric(Exposition out, String appId, Integer target) {
    String help = "Executor target last applied (no sample before the first)";
    Exposition.Family targets = out.gauge(PREFIX + "executors_target", help, "application_id");
    if (target != null) {
      targets.add(target, appId);
    }
    targets.end();
  }

  /** Per query: its progress, and per source partition its lag and its two offsets, counters as they only grow. */
  static void queryMetrics(Exposition out, String appId, List<DriverState.Query> queries) {
    String[] byQuery = {"application_id", "query"};
    String[] byPartition = {"application_id", "query", "topic", "partition"};
    Exposition.Family input = out.gauge(PREFIX + "query_input_records_per_second", "Arrival rate of the last batch", byQuery);
    Exposition.Family processed =
        out.gauge(PREFIX + "query_processed_records_per_second", "Processing rate of the last batch", byQuery);
    Exposition.Family duration = out.gauge(PREFIX + "query_batch_duration_seconds", "Duration of the last batch", byQuery);
    Exposition.Family rows = out.counter(PREFIX + "query_input_records", "Records read by the query", byQuery);
    Exposition.Family batch = out.gauge(PREFIX + "query_last_batch_id", "Id of the last completed batch", byQuery);
    Exposition.Family batches =
        out.counter(PREFIX + "query_batches", "Micro-batches completed (0-row batches included)", byQuery);
    Exposition.Family seconds =
        out.counter(PREFIX + "query_batch_seconds", "Durations of the completed batches (triggerExecution)", byQuery);
    for (DriverState.Query q : queries) {
      input.add(q.inputPerSecond(), appId, q.name());
      processed.add(q.processedPerSecond(), appId, q.name());
      duration.add(q.batchDurationSeconds(), appId, q.name());
      rows.add(q.inputRowsTotal(), appId, q.name());
      batch.add(q.batchId(), appId, q.name());
      batches.add(q.batchesTotal(), appId, q.name());
      seconds.add(q.batchSecondsTotal(), appId, q.name());
    }
    for (Exposition.Family f : List.of(input, processed, duration, rows, batch, batches, seconds)) {
      f.end();
    }
    Exposition.Family lag =
        out.gauge(PREFIX + "source_lag_records", "Offsets behind latest per source partition (consumer lag)", byPartition);
    Exposition.Family latest =
        out.counter(PREFIX + "source_latest_offset", "Latest (end) offset of the source partition", byPartition);
    Exposition.Family committed =
        out.counter(PREFIX + "source_committed_offset", "End offset of the last completed batch", byPartition);
    Exposition.Family total =
        out.gauge(PREFIX + "lag_records", "Offsets behind latest over all partitions (consumer lag)", byQuery);
    for (DriverState.Query q : queries) {
      long sum = 0;
      for (Map.Entry<List<String>, Long> entry : q.committed().entrySet()) {
        long done = entry.getValue();
        long end = Math.max(q.reportedLatest().getOrDefault(entry.getKey(), done), done);
        String topic = entry.getKey().get(0), partition = entry.getKey().get(1);
        lag.add(end - done, appId, q.name(), topic, partition);
        latest.add(end, appId, q.name(), topic, partition);
        committed.add(done, appId, q.name(), topic, partition);
        sum += end - done;
      }
      total.add(sum, appId, q.name());
    }
    for (Exposition.Family f : List.of(lag, latest, committed, total)) {
      f.end();
    }
  }
}
