package daedalus.spark.example;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.udf;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * A small Java Structured Streaming job to attach the agent plugin to: the rate source, a stateful count per key
 * (a shuffle and state on the executors), micro-batches every 500 ms, until the stop file appears.
 *
 * <p>Arguments: query name, rows per second, checkpoint folder, stop file, and optionally the milliseconds each row
 * holds its task (waiting, not computing), so tasks are still running when an executor is asked to leave.
 */
public final class RateCount {
  private RateCount() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 4 && args.length != 5) {
      System.err.println("usage: RateCount <query name> <rows per second> <checkpoint dir> <stop file> [row ms]");
      System.exit(2);
    }
    long rowNanos = args.length == 5 ? Math.round(Double.parseDouble(args[4]) * 1e6) : 0;
    SparkSession spark = SparkSession.builder().appName("daedalus-rate-count").getOrCreate();
    UserDefinedFunction hold =
        udf(
            (UDF1<Long, Long>)
                value -> {
                  LockSupport.parkNanos(rowNanos);
                  return value;
                },
            DataTypes.LongType);
    Dataset<Row> rows =
        spark.readStream().format("rate").option("rowsPerSecond", args[1]).option("numPartitions", "2").load();
    if (rowNanos > 0) {
      rows = rows.withColumn("value", hold.apply(col("value")));
    }
    Dataset<Row> counts = rows.groupBy(col("value").mod(16).alias("key")).count();
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
