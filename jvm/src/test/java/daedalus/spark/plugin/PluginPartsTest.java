package daedalus.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The plugin's pure parts: target validation, modes it refuses, victims, offsets, exposition and settings. */
class PluginPartsTest {
  private static int parse(String body) throws TargetException {
    return Targets.parse(body.getBytes(StandardCharsets.UTF_8), 1, 4);
  }

  @Test
  void aValidTargetIsItsInteger() throws TargetException {
    assertEquals(3, parse("{\"target\": 3}"));
    assertEquals(4, parse("{\"other\": 1, \"target\": 4}"));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"target\": -1}|must not be negative",
        "{\"target\": 1.5}|must be an integer",
        "{\"target\": \"2\"}|must be an integer",
        "{\"target\": true}|must be an integer",
        "{\"target\": null}|must be an integer",
        "{\"target\": 0}|below the configured minimum of 1",
        "{\"target\": 5}|above the configured maximum of 4",
        "{\"target\": 100000000000000000000}|above the configured maximum of 4",
        "{\"n\": 1}|expected a JSON object",
        "[1]|expected a JSON object",
        "{|body is not JSON",
      })
  void anInvalidTargetSaysWhy(String body, String why) {
    TargetException e = assertThrows(TargetException.class, () -> parse(body));
    assertTrue(e.getMessage().contains(why), e.getMessage());
    assertTrue(!e.refused);
  }

  @Test
  void anEmptyOrNonUtf8BodyIsRefused() {
    assertThrows(TargetException.class, () -> parse(""));
    assertThrows(TargetException.class, () -> Targets.parse(new byte[] {(byte) 0xff, '{'}, 1, 4));
  }

  @ParameterizedTest(name = "{0} / {1}")
  @CsvSource({
    "local[*], false, local mode",
    "LOCAL[2], false, local mode",
    "spark://h:7077, true, dynamic allocation",
    "k8s://https://api:6443, ' TRUE ', dynamic allocation",
    "spark://h:7077, false, ''",
  })
  void modesTheAgentCannotServe(String master, String dynamicAllocation, String named) {
    String why = AgentDriverPlugin.unservableMode(master, dynamicAllocation);
    assertTrue(named.isEmpty() ? why.isEmpty() : why.contains(named), why);
  }

  private static DriverState.Executor executor(String id, int tasks, long busyMs) {
    DriverState.Executor e = new DriverState.Executor(id, 1);
    e.activeTasks = tasks;
    e.busyMs = busyMs;
    return e;
  }

  @Test
  void victimsAreTheLeastBusy() {
    List<DriverState.Executor> live =
        List.of(executor("1", 1, 10), executor("2", 0, 50), executor("3", 0, 20), executor("4", 0, 20));
    assertEquals(List.of("3", "4"), ExecutorScaler.chooseVictims(live, 2));
    assertEquals(List.of(), ExecutorScaler.chooseVictims(live, 0));
    assertEquals(4, ExecutorScaler.chooseVictims(live, 9).size());
  }

  @Test
  void theDriverAndRemovedExecutorsAreNotLive() {
    DriverState.Executor gone = executor("2", 0, 0);
    gone.active = false;
    List<DriverState.Executor> live = DriverState.live(List.of(executor("driver", 0, 0), executor("1", 0, 0), gone));
    assertEquals(1, live.size());
    assertEquals("1", live.get(0).id);
  }

  @Test
  void offsetsAreFlattenedPerTopicAndPartition() {
    Map<List<String>, Long> flat = DriverState.flatten("{\"t\": {\"10\": 5, \"2\": 7, \"x\": \"no\"}, \"u\": 3}");
    assertEquals(List.of(List.of("t", "2"), List.of("t", "10")), List.copyOf(flat.keySet()));
    assertEquals(7L, flat.get(List.of("t", "2")));
    assertTrue(DriverState.flatten("42").isEmpty());
    assertTrue(DriverState.flatten("not json").isEmpty());
    assertTrue(DriverState.flatten(null).isEmpty());
  }

  @Test
  void exposition() {
    Exposition out = new Exposition();
    out.counter("c", "help \\ with\nnewline", "a").add(2, "x\"y\\z\n").end();
    out.gauge("g", "a gauge").add(0.25).add(Double.NaN).end();
    assertEquals(
        "# HELP c help \\\\ with\\nnewline\n# TYPE c counter\nc_total{a=\"x\\\"y\\\\z\\n\"} 2.0\n"
            + "# HELP g a gauge\n# TYPE g gauge\ng 0.25\ng NaN\n",
        out.text());
  }

  @Test
  void offsetsAreCountersAndATargetNotYetAppliedHasNoSample() {
    DriverState.Query q =
        new DriverState.Query(
            "q", "run", 0, 10, 1.0, 1.0, 1.0, Map.of(List.of("t", "0"), 10L), Map.of(List.of("t", "0"), 20L), 1, 1.0);
    Exposition out = new Exposition();
    AgentDriverPlugin.queryMetrics(out, "app", List.of(q));
    AgentDriverPlugin.targetMetric(out, "app", null);
    String text = out.text();
    String partition = "{application_id=\"app\",query=\"q\",topic=\"t\",partition=\"0\"}";
    assertTrue(text.contains("# TYPE daedalus_spark_source_latest_offset counter\n"), text);
    assertTrue(text.contains("daedalus_spark_source_latest_offset_total" + partition + " 20.0\n"), text);
    assertTrue(text.contains("# TYPE daedalus_spark_source_committed_offset counter\n"), text);
    assertTrue(text.contains("daedalus_spark_source_committed_offset_total" + partition + " 10.0\n"), text);
    assertTrue(text.endsWith("# TYPE daedalus_spark_executors_target gauge\n"), text); // the family, no sample
    Exposition applied = new Exposition();
    AgentDriverPlugin.targetMetric(applied, "app", 3);
    String sample = "daedalus_spark_executors_target{application_id=\"app\"} 3.0\n";
    assertTrue(applied.text().endsWith(sample), applied.text());
  }

  @Test
  void settingsHaveDefaultsAndBadOnesAreNamed() {
    AgentConfig config = AgentConfig.from(new SparkConf(false), Map.of(AgentConfig.TOKEN_ENV, "t0k"));
    assertEquals(9095, config.port());
    assertEquals("127.0.0.1", config.host());
    assertEquals("t0k", config.token());
    assertEquals(AgentConfig.ScaleIn.DECOMMISSION, config.scaleIn());
    SparkConf kill = new SparkConf(false).set("spark.daedalus.agent.scaleIn", "KILL");
    assertEquals(AgentConfig.ScaleIn.KILL, AgentConfig.from(kill, Map.of()).scaleIn());
  }

  @ParameterizedTest
  @ValueSource(strings = {"port=x", "port=70000", "maxExecutors=0", "pollSeconds=0", "scaleIn=drain"})
  void aBadSettingStopsTheDriverNamingIt(String setting) {
    String[] kv = setting.split("=");
    SparkConf conf = new SparkConf(false).set("spark.daedalus.agent." + kv[0], kv[1]);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> AgentConfig.from(conf, Map.of()));
    assertTrue(e.getMessage().contains("spark.daedalus.agent." + kv[0]), e.getMessage());
  }
}
