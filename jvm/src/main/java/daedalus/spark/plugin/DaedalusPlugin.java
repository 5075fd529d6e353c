package daedalus.spark.plugin;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Execute/Monitor (JVM agent): the Spark plugin ({@code spark.plugins=daedalus.spark.plugin.DaedalusPlugin}) that
 * runs the daedalus-spark agent inside the driver of any Spark application, whatever its language.
 */
public final class DaedalusPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new AgentDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return null; // the agent only talks to the driver
  }
}
