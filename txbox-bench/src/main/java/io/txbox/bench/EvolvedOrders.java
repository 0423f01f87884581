package io.txbox.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.txbox.Message;
import io.txbox.jackson.EventTypes;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

/**
 * The inbox benchmark's evolved event: version 3 of an order, and the same order as version 1
 * wrote it (a field renamed, a field added, an amount turned into minor units on the way).
 */
final class EvolvedOrders {
  /** Version 3. */
  record Order(String orderId, String customerId, String sku, int quantity, String currency, long amountMinor) {}

  static final EventTypes TYPES = EventTypes.builder(new ObjectMapper())
      .type("OrderPlaced", 3, Order.class, "orders", Order::sku)
      .upcast("OrderPlaced", 1, EvolvedOrders::v1ToV2)
      .upcast("OrderPlaced", 2, EvolvedOrders::v2ToV3)
      .build();

  static final Message V3 = TYPES.toMessage(new Order("o-1", "c-9", "sku-1", 2, "EUR", 1250));

  static final Message V1 = Message.builder().type("OrderPlaced").version(1).destination("orders").key("sku-1")
      .payload("{\"orderId\":\"o-1\",\"customer\":\"c-9\",\"sku\":\"sku-1\",\"quantity\":2,\"amount\":\"12.50\"}"
          .getBytes(StandardCharsets.UTF_8), EventTypes.CONTENT_TYPE).build();

  private EvolvedOrders() {}

  private static ObjectNode v1ToV2(ObjectNode v1) {
    v1.set("customerId", v1.remove("customer"));
    return v1.put("currency", "EUR");
  }

  private static ObjectNode v2ToV3(ObjectNode v2) {
    return v2.put("amountMinor", new BigDecimal(v2.remove("amount").asText()).movePointRight(2).longValueExact());
  }
}
