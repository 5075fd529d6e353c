package daedalus.spark.example;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.udf;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.locks.LockSupport;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;

/**
 * A Java Structured Streaming job on Spark's Kafka source that an autoscaler has work to do for: each record holds its
 * task for a set time (waiting, not computing, so a 2-core machine can host several executors), which makes one
 * executor's capacity known in advance. Every micro-batch writes its record and byte counts to its own file, named by
 * the batch id: a batch replayed after a failure rewrites its file, so the files add up to each record once.
 *
 * <p>Arguments: query name, bootstrap servers, topic, checkpoint folder, stop file, output folder, milliseconds per
 * record. Micro-batches every second, until the stop file appears.
 */
public final class KafkaCount {
  private KafkaCount() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 7) {
      System.err.println(
          "usage: KafkaCount <query name> <bootstrap> <topic> <checkpoint dir> <stop file> <output dir> <record ms>");
      System.exit(2);
    }
    long recordNanos = Math.round(Double.parseDouble(args[6]) * 1e6);
    String outputDir = args[5]; // a String: the batch function holds nothing that cannot be serialized
    Files.createDirectories(Path.of(outputDir));
    SparkSession spark = SparkSession.builder().appName("daedalus-kafka-count").getOrCreate();
    UserDefinedFunction hold =
        udf(
            (UDF1<byte[], Long>)
                value -> {
                  LockSupport.parkNanos(recordNanos);
                  return value == null ? 0L : (long) value.length;
                },
            DataTypes.LongType);
    Dataset<Row> records =
        spark
            .readStream()
            .format("kafka")
            .option("kafka.bootstrap.servers", args[1])
            .option("subscribe", args[2])
            .option("startingOffsets", "earliest")
            .load();
    VoidFunction2<Dataset<Row>, Long> writeCounts =
        (batch, batchId) -> {
          Row totals = batch.agg(count(lit(1)), sum(hold.apply(col("value")))).first();
          long bytes = totals.isNullAt(1) ? 0L : totals.getLong(1);
          String line = totals.getLong(0) + " " + bytes + "\n";
          Path output = Path.of(outputDir);
          Path partial = output.resolve("." + batchId + ".partial");
          Files.write(partial, line.getBytes(StandardCharsets.UTF_8));
          Files.move(partial, output.resolve("batch-" + batchId + ".txt"), StandardCopyOption.ATOMIC_MOVE);
        };
    StreamingQuery query =
        records
            .writeStream()
            .queryName(args[0])
            .foreachBatch(writeCounts)
            .option("checkpointLocation", args[3])
            .trigger(Trigger.ProcessingTime(1000))
            .start();
    Path stop = Path.of(args[4]);
    while (query.isActive() && !Files.exists(stop)) {
      query.awaitTermination(500);
    }
    query.stop();
    spark.stop();
  }
}
