package daedalus.spark.example;

import static org.apache.spark.sql.functions.col;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * A small Java Structured Streaming job to attach the agent plugin to: the rate source, a stateful count per key
 * (a shuffle and state on the executors), micro-batches every 500 ms, until the stop file appears.
 *
 * <p>Arguments: query name, rows per second, checkpoint folder, stop file.
 */
public final class RateCount {
  private RateCount() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: RateCount <query name> <rows per second> <checkpoint dir> <stop file>");
      System.exit(2);
    }
    SparkSession spark = SparkSession.builder().appName("daedalus-rate-count").getOrCreate();
    Dataset<Row> counts =
        spark
            .readStream()
            .format("rate")
            .option("rowsPerSecond", args[1])
            .option("numPartitions", "2")
            .load()
            .groupBy(col("value").mod(16).alias("key"))
            .count();
    StreamingQuery query =
        counts
            .writeStream()
            .queryName(args[0])
            .outputMode("update")
            .format("noop")
            .option("checkpointLocation", args[2])
            .trigger(Trigger.ProcessingTime(500))
            .start();
    Path stop = Path.of(args[3]);
    while (query.isActive() && !Files.exists(stop)) {
      query.awaitTermination(500);
    }
    query.stop();
    spark.stop();
  }
}
