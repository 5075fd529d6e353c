package daedalus.spark.plugin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.sql.streaming.SourceProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;

/**
 * Monitor (JVM agent): what the driver's listener bus says about executors (tasks, task time, records read) and
 * streaming queries (progress events, which Spark also posts there), kept as running totals.
 */
final class DriverState extends SparkListener {
  static final String DRIVER_ID = "driver";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One executor as the listener saw it; removed executors stay, inactive, so their counters never go back. */
  static final class Executor {
    final String id;
    int cores;
    boolean active = true;
    int activeTasks;
    long busyMs;
    long records;

    Executor(String id, int cores) {
      this.id = id;
      this.cores = cores;
    }
  }

  /** The latest progress of one query and its running totals. */
  record Query(
      String name,
      String runId,
      long batchId,
      long inputRowsTotal,
      double inputPerSecond,
      double processedPerSecond,
      double batchDurationSeconds,
      Map<List<String>, Long> committed,
      Map<List<String>, Long> reportedLatest,
      long batchesTotal,
      double batchSecondsTotal) {}

  private final Map<String, Executor> executors = new TreeMap<>();
  private final Map<String, Query> queries = new TreeMap<>();

  @Override
  public synchronized void onExecutorAdded(SparkListenerExecutorAdded event) {
    Executor e = executors.computeIfAbsent(event.executorId(), id -> new Executor(id, 0));
    e.cores = event.executorInfo().totalCores();
    e.active = true;
  }

  @Override
  public synchronized void onExecutorRemoved(SparkListenerExecutorRemoved event) {
    Executor e = executors.get(event.executorId());
    if (e != null) {
      e.active = false;
      e.activeTasks = 0;
    }
  }

  @Override
  public synchronized void onTaskStart(SparkListenerTaskStart event) {
    Executor e = executors.get(event.taskInfo().executorId());
    if (e != null) {
      e.activeTasks++;
    }
  }

  @Override
  public synchronized void onTaskEnd(SparkListenerTaskEnd event) {
    String id = event.taskInfo().executorId();
    Executor e = executors.computeIfAbsent(id, key -> new Executor(key, 0));
    e.activeTasks = Math.max(0, e.activeTasks - 1);
    e.busyMs += Math.max(0, event.taskInfo().duration());
    if (event.taskInfo().successful() && event.taskMetrics() != null) {
      e.records += event.taskMetrics().inputMetrics().recordsRead();
    }
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (event instanceof StreamingQueryListener.QueryProgressEvent progress) {
      update(progress.progress());
    }
  }

  /** Every progress event is a completed batch; a repeated (run, batch id) is counted once. */
  synchronized void update(StreamingQueryProgress p) {
    String name = p.name() != null ? p.name() : String.valueOf(p.id());
    Map<List<String>, Long> committed = new TreeMap<>(DriverState::compareKeys);
    Map<List<String>, Long> latest = new TreeMap<>(DriverState::compareKeys);
    for (SourceProgress source : p.sources()) {
      committed.putAll(flatten(source.endOffset()));
      latest.putAll(flatten(source.latestOffset()));
    }
    String runId = String.valueOf(p.runId());
    Query before = queries.get(name);
    boolean fresh = before == null || !runId.equals(before.runId) || p.batchId() > before.batchId;
    Long trigger = p.durationMs() == null ? null : p.durationMs().get("triggerExecution");
    double seconds = Math.max(0.0, (trigger != null ? trigger : p.batchDuration()) / 1000.0);
    queries.put(
        name,
        new Query(
            name,
            runId,
            p.batchId(),
            (before == null ? 0 : before.inputRowsTotal) + p.numInputRows(),
            finite(p.inputRowsPerSecond()),
            finite(p.processedRowsPerSecond()),
            p.batchDuration() / 1000.0,
            committed.isEmpty() && before != null ? before.committed : committed,
            latest,
            (before == null ? 0 : before.batchesTotal) + (fresh ? 1 : 0),
            (before == null ? 0.0 : before.batchSecondsTotal) + (fresh ? seconds : 0.0)));
  }

  /** {topic: {partition: offset}} as a source reports it (JSON) into (topic, partition) -> offset. */
  static Map<List<String>, Long> flatten(String raw) {
    Map<List<String>, Long> flat = new TreeMap<>(DriverState::compareKeys);
    if (raw == null) {
      return flat;
    }
    JsonNode root;
    try {
      root = JSON.readTree(raw);
    } catch (java.io.IOException e) {
      return flat;
    }
    if (root == null || !root.isObject()) {
      return flat;
    }
    for (Iterator<Map.Entry<String, JsonNode>> topics = root.fields(); topics.hasNext(); ) {
      Map.Entry<String, JsonNode> topic = topics.next();
      if (!topic.getValue().isObject()) {
        continue;
      }
      for (Iterator<Map.Entry<String, JsonNode>> parts = topic.getValue().fields(); parts.hasNext(); ) {
        Map.Entry<String, JsonNode> part = parts.next();
        if (part.getValue().isIntegralNumber()) {
          flat.put(List.of(topic.getKey(), part.getKey()), part.getValue().longValue());
        }
      }
    }
    return flat;
  }

  private static int compareKeys(List<String> a, List<String> b) {
    int topic = a.get(0).compareTo(b.get(0));
    if (topic != 0) {
      return topic;
    }
    String pa = a.get(1), pb = b.get(1);
    return pa.length() != pb.length() ? Integer.compare(pa.length(), pb.length()) : pa.compareTo(pb);
  }

  private static double finite(double value) {
    return Double.isFinite(value) ? value : 0.0;
  }

  /** Copies of the executors (the driver included, as Spark lists it). */
  synchronized List<Executor> executors() {
    List<Executor> copy = new ArrayList<>();
    for (Executor e : executors.values()) {
      Executor c = new Executor(e.id, e.cores);
      c.active = e.active;
      c.activeTasks = e.activeTasks;
      c.busyMs = e.busyMs;
      c.records = e.records;
      copy.add(c);
    }
    return copy;
  }

  synchronized List<Query> queries() {
    return new ArrayList<>(queries.values());
  }

  /** The running executors, the driver excluded: what the scale-out counts. */
  static List<Executor> live(List<Executor> executors) {
    List<Executor> live = new ArrayList<>();
    for (Executor e : executors) {
      if (e.active && !DRIVER_ID.equals(e.id)) {
        live.add(e);
      }
    }
    return live;
  }
}
