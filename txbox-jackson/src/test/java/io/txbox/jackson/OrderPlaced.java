package io.txbox.jackson;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;

/**
 * The shop's order event at version 3, and how it got there: version 1 had {@code customer}; 2
 * renamed it {@code customerId} and added {@code currency}; 3 turned {@code amount}, a decimal
 * string, into {@code amountMinor}, minor units.
 */
record OrderPlaced(String orderId, String customerId, String sku, int quantity, String currency, long amountMinor) {

  /** The registry an order service and its consumers share. */
  static EventTypes types(ObjectMapper mapper) {
    return types(mapper, "orders");
  }

  /** The registry, with the events sent to {@code destination}. */
  static EventTypes types(ObjectMapper mapper, String destination) {
    return EventTypes.builder(mapper)
        .type("OrderPlaced", 3, OrderPlaced.class, destination, OrderPlaced::sku)
        .upcast("OrderPlaced", 1, OrderPlaced::renameCustomerAndAddCurrency)
        .upcast("OrderPlaced", 2, OrderPlaced::amountInMinorUnits)
        .build();
  }

  static ObjectNode renameCustomerAndAddCurrency(ObjectNode v1) {
    v1.set("customerId", v1.remove("customer"));
    v1.put("currency", "EUR"); // version 1 was sold in euros only
    return v1;
  }

  static ObjectNode amountInMinorUnits(ObjectNode v2) {
    BigDecimal amount = new BigDecimal(v2.remove("amount").asText());
    v2.put("amountMinor", amount.movePointRight(2).longValueExact());
    return v2;
  }
}
