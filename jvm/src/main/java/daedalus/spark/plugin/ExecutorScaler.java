package daedalus.spark.plugin;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.spark.ExecutorAllocationClient;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.ExecutorDecommissionInfo;
import org.apache.spark.scheduler.SchedulerBackend;

/**
 * Execute (JVM agent): apply an absolute executor target through the SparkContext's developer API:
 * requestTotalExecutors to grow; to shrink, the least-loaded executors are decommissioned (their tasks finish and
 * their blocks migrate) where Spark's decommissioning is on, else killed. Idempotent.
 */
final class ExecutorScaler {
  private final SparkContext sc;
  private final Supplier<List<DriverState.Executor>> executors;
  private final AgentConfig.ScaleIn wanted;
  private final Set<String> leaving = new HashSet<>();
  private volatile Integer target;

  ExecutorScaler(SparkContext sc, Supplier<List<DriverState.Executor>> executors, AgentConfig.ScaleIn wanted) {
    this.sc = sc;
    this.executors = executors;
    this.wanted = wanted;
  }

  /** Spark decommissions executors only with spark.decommission.enabled, through a backend that can. */
  static boolean decommissionAvailable(SparkContext sc) {
    return sc.getConf().getBoolean("spark.decommission.enabled", false)
        && sc.schedulerBackend() instanceof ExecutorAllocationClient;
  }

  /** Decommissioning where it was asked for and Spark can (the scheduler backend exists once the context has
   * started), else killing. */
  AgentConfig.ScaleIn scaleIn() {
    return wanted == AgentConfig.ScaleIn.DECOMMISSION && decommissionAvailable(sc) ? wanted : AgentConfig.ScaleIn.KILL;
  }

  Integer target() {
    return target;
  }

  /** Live executors not asked to leave: those that take tasks. */
  synchronized List<DriverState.Executor> serving() {
    List<DriverState.Executor> live = DriverState.live(executors.get());
    Set<String> ids = new HashSet<>();
    live.forEach(e -> ids.add(e.id));
    leaving.retainAll(ids); // gone for good: forget them
    live.removeIf(e -> leaving.contains(e.id));
    return live;
  }

  int current() {
    return serving().size();
  }

  /** The {@code count} serving executors with the least running work (fewest active tasks, then least busy). */
  static List<String> chooseVictims(List<DriverState.Executor> live, int count) {
    List<DriverState.Executor> ranked = new ArrayList<>(live);
    ranked.sort(
        Comparator.<DriverState.Executor>comparingInt(e -> e.activeTasks)
            .thenComparingLong(e -> e.busyMs)
            .thenComparing(e -> e.id));
    List<String> ids = new ArrayList<>();
    for (DriverState.Executor e : ranked.subList(0, Math.max(0, Math.min(count, ranked.size())))) {
      ids.add(e.id);
    }
    return ids;
  }

  /** Sets the absolute target; returns the ids of the executors asked to leave. */
  synchronized List<String> apply(int wanted) throws TargetException {
    List<DriverState.Executor> live = serving();
    List<String> victims = wanted < live.size() ? chooseVictims(live, live.size() - wanted) : List.of();
    List<String> toKill = new ArrayList<>(victims);
    if (scaleIn() == AgentConfig.ScaleIn.DECOMMISSION) {
      ExecutorAllocationClient client = (ExecutorAllocationClient) (SchedulerBackend) sc.schedulerBackend();
      for (String id : victims) {
        ExecutorDecommissionInfo info = ExecutorDecommissionInfo.apply("scale-in to " + wanted, scala.Option.apply(null));
        if (client.decommissionExecutor(id, info, true, false)) {
          toKill.remove(id);
        }
      }
    }
    if (!toKill.isEmpty() && !sc.killExecutors(scala.collection.JavaConverters.asScalaBuffer(toKill).toList())) {
      throw TargetException.refused(
          "Spark declined to remove executors " + String.join(", ", toKill) + " (killExecutors: false)");
    }
    leaving.addAll(victims);
    scala.collection.immutable.Map<String, Object> none = scala.collection.immutable.Map$.MODULE$.empty();
    if (!sc.requestTotalExecutors(wanted, 0, none)) {
      throw TargetException.refused(
          "Spark declined the target of " + wanted + " executors (requestTotalExecutors: false)");
    }
    target = wanted;
    return victims;
  }
}
