package daedalus.spark.plugin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Execute (JVM agent): the agent's HTTP contract, as the Python agent serves it: GET /metrics, GET /healthz,
 * GET and PUT /executors (bearer token when set; 400 bad target, 401 token, 409 refused, 503 driver error).
 * A bounded pool of threads serves it; requests beyond its queue are dropped, never given a thread each.
 */
final class AgentHttp {
  static final int MAX_BODY_BYTES = 4096;
  static final int THREADS = 4;
  private static final Pattern CONTENT_LENGTH = Pattern.compile("[0-9]{1,10}");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Logger LOG = LoggerFactory.getLogger(AgentHttp.class);

  /** What the routes ask the agent. */
  interface Agent {
    String metrics();

    Map<String, Object> status();

    Map<String, Object> apply(int target) throws TargetException;

    int minExecutors();

    int maxExecutors();

    String token(); // null: no token required
  }

  private final HttpServer server;
  private final ThreadPoolExecutor pool;

  AgentHttp(Agent agent, String host, int port) throws IOException {
    server = HttpServer.create(new InetSocketAddress(host, port), 16);
    pool =
        new ThreadPoolExecutor(
            THREADS, THREADS, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(32), runnable -> {
              Thread t = new Thread(runnable, "daedalus-agent-http");
              t.setDaemon(true);
              return t;
            }, new ThreadPoolExecutor.DiscardPolicy());
    server.setExecutor(pool);
    server.createContext("/", exchange -> {
      try {
        route(agent, exchange);
      } catch (RuntimeException | LinkageError e) {
        LOG.warn("daedalus agent: {} {} failed", exchange.getRequestMethod(), exchange.getRequestURI(), e);
        if (exchange.getResponseCode() < 0) { // nothing sent yet
          send(exchange, 500, Map.of("error", "internal error: " + e));
        }
      } finally {
        exchange.close();
      }
    });
    server.start();
  }

  int port() {
    return server.getAddress().getPort();
  }

  void stop() {
    server.stop(0);
    pool.shutdownNow();
  }

  private static void route(Agent agent, HttpExchange exchange) throws IOException {
    String path = exchange.getRequestURI().getRawPath();
    String query = exchange.getRequestURI().getRawQuery();
    String full = query == null ? path : path + "?" + query;
    String method = exchange.getRequestMethod();
    if (method.equals("GET") || method.equals("HEAD")) {
      if (path.equals("/metrics")) {
        sendText(exchange, 200, agent.metrics(), Exposition.CONTENT_TYPE);
      } else if (full.equals("/executors")) {
        if (authorized(agent, exchange)) {
          Map<String, Object> status;
          try {
            status = agent.status();
          } catch (RuntimeException e) {
            send(exchange, 503, Map.of("error", clip("executor status unavailable: " + e, 300)));
            return;
          }
          send(exchange, 200, status);
        }
      } else if (full.equals("/healthz")) {
        send(exchange, 200, Map.of("ok", true));
      } else {
        send(exchange, 404, Map.of("error", "no route " + full));
      }
    } else if (method.equals("PUT") || method.equals("POST")) {
      if (!full.equals("/executors")) {
        send(exchange, 404, Map.of("error", "no route " + full));
        return;
      }
      if (!authorized(agent, exchange)) {
        return;
      }
      byte[] body;
      try {
        body = body(exchange);
      } catch (BadRequest e) {
        exchange.getResponseHeaders().set("Connection", "close");
        send(exchange, e.code, Map.of("error", e.getMessage()));
        return;
      }
      int target;
      try {
        target = Targets.parse(body, agent.minExecutors(), agent.maxExecutors());
      } catch (TargetException e) {
        send(exchange, 400, Map.of("error", e.getMessage()));
        return;
      }
      try {
        send(exchange, 200, agent.apply(target));
      } catch (TargetException e) {
        send(exchange, e.refused ? 409 : 400, Map.of("error", e.getMessage()));
      } catch (RuntimeException e) {
        send(exchange, 503, Map.of("error", "could not apply target " + target + ": " + e));
      }
    } else {
      send(exchange, 501, Map.of("error", "Unsupported method ('" + method + "')"));
    }
  }

  /** A request this server will not read: answered with `code`, nothing applied. */
  private static final class BadRequest extends Exception {
    private static final long serialVersionUID = 1L;
    final int code;

    BadRequest(int code, String message) {
      super(message);
      this.code = code;
    }
  }

  /** The complete body announced by one valid Content-Length: never a partial one. */
  private static byte[] body(HttpExchange exchange) throws BadRequest, IOException {
    if (exchange.getRequestHeaders().containsKey("Transfer-encoding")) {
      throw new BadRequest(400, "Transfer-Encoding is not supported; send a Content-Length");
    }
    List<String> values = exchange.getRequestHeaders().get("Content-length");
    if (values == null || values.size() != 1) {
      throw new BadRequest(400, "exactly one Content-Length header is required");
    }
    String raw = values.get(0);
    if (!CONTENT_LENGTH.matcher(raw).matches()) {
      throw new BadRequest(400, "Content-Length '" + clip(raw, 20) + "' is not a non-negative integer");
    }
    long length = Long.parseLong(raw);
    if (length > MAX_BODY_BYTES) {
      throw new BadRequest(413, "body of " + length + " bytes is over the limit of " + MAX_BODY_BYTES);
    }
    try (InputStream in = exchange.getRequestBody()) {
      byte[] body = in.readNBytes((int) length);
      if (body.length != length) {
        throw new BadRequest(400, "body has " + body.length + " bytes, Content-Length announced " + length);
      }
      return body;
    }
  }

  private static boolean authorized(Agent agent, HttpExchange exchange) throws IOException {
    String token = agent.token();
    if (token == null) {
      return true;
    }
    String given = exchange.getRequestHeaders().getFirst("Authorization");
    byte[] expected = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
    if (given != null && MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), expected)) {
      return true;
    }
    send(exchange, 401, Map.of("error", "missing or wrong bearer token"));
    return false;
  }

  private static String clip(String text, int limit) {
    return text.length() <= limit ? text : text.substring(0, limit);
  }

  static void send(HttpExchange exchange, int code, Map<String, ?> payload) throws IOException {
    String text;
    try {
      text = JSON.writeValueAsString(new LinkedHashMap<>(payload));
    } catch (JsonProcessingException e) {
      text = "{\"error\": \"unencodable answer\"}";
      code = 500;
    }
    sendText(exchange, code, text, "application/json");
  }

  private static void sendText(HttpExchange exchange, int code, String text, String type) throws IOException {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(code, head ? -1 : bytes.length);
    if (!head) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }
}
