package daedalus.spark.plugin;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Monitor (JVM agent): metric families written in the Prometheus text exposition format (version 0.0.4). */
final class Exposition {
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
  private final StringBuilder out = new StringBuilder();

  /** One family: a counter's samples are named {@code <name>_total}, as Prometheus clients write them. */
  final class Family {
    private final String header;
    private final String sample;
    private final String[] labels;
    private final List<String> lines = new ArrayList<>();

    private Family(String header, String sample, String[] labels) {
      this.header = header;
      this.sample = sample;
      this.labels = labels;
    }

    Family add(double value, String... values) {
      StringBuilder line = new StringBuilder(sample);
      if (labels.length > 0) {
        line.append('{');
        for (int i = 0; i < labels.length; i++) {
          line.append(i > 0 ? "," : "").append(labels[i]).append("=\"").append(escape(values[i])).append('"');
        }
        line.append('}');
      }
      lines.add(line.append(' ').append(number(value)).append('\n').toString());
      return this;
    }

    /** Writes the family: its HELP and TYPE lines, then its samples. */
    void end() {
      out.append(header);
      lines.forEach(out::append);
    }
  }

  Family gauge(String name, String help, String... labels) {
    return family(name, "gauge", name, help, labels);
  }

  Family counter(String name, String help, String... labels) {
    return family(name, "counter", name + "_total", help, labels);
  }

  private Family family(String name, String type, String sample, String help, String[] labels) {
    String escaped = help.replace("\\", "\\\\").replace("\n", "\\n");
    String header = "# HELP " + name + " " + escaped + "\n# TYPE " + name + " " + type + "\n";
    return new Family(header, sample, labels);
  }

  static String escape(String value) {
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }

  static String number(double value) {
    if (Double.isNaN(value)) {
      return "NaN";
    }
    if (Double.isInfinite(value)) {
      return value > 0 ? "+Inf" : "-Inf";
    }
    if (value == Math.rint(value) && Math.abs(value) < 1e15) {
      return String.format(Locale.ROOT, "%.1f", value);
    }
    return Double.toString(value);
  }

  String text() {
    return out.toString();
  }
}
