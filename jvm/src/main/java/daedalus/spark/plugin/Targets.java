package daedalus.spark.plugin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigInteger;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** Execute (JVM agent): validation of an absolute executor target received over HTTP (pure). */
final class Targets {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Targets() {}

  /** The integer target of a JSON body {@code {"target": n}}, within [min, max]. */
  static int parse(byte[] body, int min, int max) throws TargetException {
    String text;
    try {
      text =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .decode(java.nio.ByteBuffer.wrap(body))
              .toString();
    } catch (CharacterCodingException e) {
      throw TargetException.invalid("body is not JSON: it is not UTF-8");
    }
    JsonNode payload;
    try {
      payload = text.isEmpty() ? null : JSON.readTree(text);
    } catch (JsonProcessingException e) {
      throw TargetException.invalid("body is not JSON: " + e.getOriginalMessage());
    }
    if (payload == null || !payload.isObject() || !payload.has("target")) {
      throw TargetException.invalid("expected a JSON object {\"target\": <integer>}");
    }
    return validate(payload.get("target"), min, max);
  }

  static int validate(JsonNode value, int min, int max) throws TargetException {
    if (!value.isIntegralNumber()) {
      throw TargetException.invalid("target must be an integer, got " + value);
    }
    BigInteger n = value.bigIntegerValue();
    if (n.signum() < 0) {
      throw TargetException.invalid("target must not be negative, got " + n);
    }
    if (n.compareTo(BigInteger.valueOf(min)) < 0) {
      throw TargetException.invalid(
          "target " + n + " is below the configured minimum of " + min + " executors");
    }
    if (n.compareTo(BigInteger.valueOf(max)) > 0) {
      throw TargetException.invalid(
          "target " + n + " is above the configured maximum of " + max + " executors");
    }
    return n.intValueExact();
  }
}
