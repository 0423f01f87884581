package io.txbox.bench;

import io.txbox.Message;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;

/** Benchmark events: a ~300-byte JSON payload and a W3C traceparent header, as a service would write. */
final class Events {
  static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  private static final String FILLER = "x".repeat(300);

  private Events() {}

  static Message orderPlaced(String destination, long orderId) {
    String key = "customer-" + ThreadLocalRandom.current().nextInt(10_000);
    String json = "{\"order\":" + orderId + ",\"customer\":\"" + key + "\",\"note\":\"";
    json = json + FILLER.substring(0, Math.max(0, 298 - json.length())) + "\"}";
    return Message.builder().type("OrderPlaced").destination(destination).key(key)
        .payload(json.getBytes(StandardCharsets.UTF_8), "application/json")
        .header("traceparent", TRACEPARENT)
        .build();
  }
}
