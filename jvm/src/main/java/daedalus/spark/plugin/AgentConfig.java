package daedalus.spark.plugin;

import java.util.Map;
import org.apache.spark.SparkConf;

/** Execute (JVM agent): the agent's settings, read from {@code spark.daedalus.agent.*} and the driver's environment. */
record AgentConfig(
    String host,
    int port,
    String token,
    int minExecutors,
    int maxExecutors,
    double pollSeconds,
    Integer initialTarget,
    ScaleIn scaleIn) {

  static final String PREFIX = "spark.daedalus.agent.";
  static final String TOKEN_ENV = "DAEDALUS_AGENT_TOKEN";

  /** How the chosen executors leave on a scale-in. */
  enum ScaleIn {
    DECOMMISSION,
    KILL;

    String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  static AgentConfig from(SparkConf conf, Map<String, String> env) {
    String token = conf.get(PREFIX + "token", "");
    if (token.isEmpty()) {
      token = env.getOrDefault(TOKEN_ENV, "");
    }
    String initial = conf.get(PREFIX + "initialTarget", "");
    AgentConfig config =
        new AgentConfig(
            conf.get(PREFIX + "host", "127.0.0.1"),
            intSetting(conf, "port", 9095),
            token.isEmpty() ? null : token,
            intSetting(conf, "minExecutors", 1),
            intSetting(conf, "maxExecutors", 16),
            doubleSetting(conf, "pollSeconds", 1.0),
            initial.isEmpty() ? null : intSetting(conf, "initialTarget", 0),
            scaleIn(conf.get(PREFIX + "scaleIn", "decommission")));
    if (config.port < 0 || config.port > 65535) {
      throw new IllegalArgumentException(PREFIX + "port must be within 0..65535, got " + config.port);
    }
    if (config.minExecutors < 0 || config.maxExecutors < config.minExecutors) {
      throw new IllegalArgumentException(
          PREFIX + "maxExecutors (" + config.maxExecutors + ") must be at least " + PREFIX + "minExecutors ("
              + config.minExecutors + "), itself at least 0");
    }
    if (!(config.pollSeconds > 0)) {
      throw new IllegalArgumentException(PREFIX + "pollSeconds must be positive, got " + config.pollSeconds);
    }
    return config;
  }

  private static ScaleIn scaleIn(String value) {
    return switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
      case "decommission" -> ScaleIn.DECOMMISSION;
      case "kill" -> ScaleIn.KILL;
      default -> throw new IllegalArgumentException(
          PREFIX + "scaleIn must be 'decommission' or 'kill', got '" + value + "'");
    };
  }

  private static int intSetting(SparkConf conf, String name, int fallback) {
    String raw = conf.get(PREFIX + name, Integer.toString(fallback)).trim();
    try {
      return Integer.parseInt(raw);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(PREFIX + name + " must be an integer, got '" + raw + "'", e);
    }
  }

  private static double doubleSetting(SparkConf conf, String name, double fallback) {
    String raw = conf.get(PREFIX + name, Double.toString(fallback)).trim();
    try {
      return Double.parseDouble(raw);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(PREFIX + name + " must be a number, got '" + raw + "'", e);
    }
  }
}
