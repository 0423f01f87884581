package io.txbox.examples.orders;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.txbox.jackson.EventTypes;
import java.math.BigDecimal;

/**
 * The shop's event types, shared by the order service that writes them and the inventory that
 * reads them: {@link OrderPlaced} at version 3, keyed by SKU so that each product's orders stay
 * in order, with the upcasters that bring versions 1 and 2 up to it.
 *
 * <pre>{@code
 * EventTypes events = ShopEvents.types(objectMapper, "orders");
 * Outbox outbox = Outbox.builder(store).events(events).build();
 * OrderPlaced order = events.read(message, OrderPlaced.class); // any version, as version 3
 * }</pre>
 */
public final class ShopEvents {
  /** The type name of {@link OrderPlaced}, the same in every version. */
  public static final String ORDER_PLACED = "OrderPlaced";

  private ShopEvents() {}

  /** The types, written and read with {@code mapper}, sent to {@code topic}. */
  public static EventTypes types(ObjectMapper mapper, String topic) {
    return EventTypes.builder(mapper)
        .type(ORDER_PLACED, 3, OrderPlaced.class, topic, OrderPlaced::sku)
        .upcast(ORDER_PLACED, 1, ShopEvents::customerIdAndCurrency)
        .upcast(ORDER_PLACED, 2, ShopEvents::amountInMinorUnits)
        .build();
  }

  /** Version 1 to 2: {@code customer} renamed; version 1 only ever sold in euros. */
  static ObjectNode customerIdAndCurrency(ObjectNode v1) {
    v1.set("customerId", v1.remove("customer"));
    v1.put("currency", "EUR");
    return v1;
  }

  /** Version 2 to 3: {@code "12.50"} becomes {@code 1250}; the currencies sold have two decimals. */
  static ObjectNode amountInMinorUnits(ObjectNode v2) {
    BigDecimal amount = new BigDecimal(v2.remove("amount").asText());
    v2.put("amountMinor", amount.movePointRight(2).longValueExact());
    return v2;
  }
}
