package daedalus.spark.plugin;

/** Execute (JVM agent): a target not applied; {@code refused} when a retry will not help (HTTP 409), else 400. */
final class TargetException extends Exception {
  private static final long serialVersionUID = 1L;
  final boolean refused;

  TargetException(String message, boolean refused) {
    super(message);
    this.refused = refused;
  }

  static TargetException invalid(String message) {
    return new TargetException(message, false);
  }

  static TargetException refused(String message) {
    return new TargetException(message, true);
  }
}
