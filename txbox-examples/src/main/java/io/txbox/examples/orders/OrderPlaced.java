package io.txbox.examples.orders;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.UUID;

/**
 * The event an order service publishes when an order is placed. {@code sequence} counts the orders
 * of its SKU (1, 2, 3, ...), so a consumer can tell whether it sees them in order.
 *
 * <pre>{@code
 * byte[] json = new OrderPlaced(orderId, "sku-7", 2, 41).toJson();
 * OrderPlaced again = OrderPlaced.fromJson(json);
 * }</pre>
 */
public record OrderPlaced(UUID orderId, String sku, int quantity, long sequence) {
  /** The message type of this event. */
  public static final String TYPE = "OrderPlaced";

  private static final ObjectMapper JSON = new ObjectMapper();

  /** This event as JSON. */
  public byte[] toJson() {
    try {
      return JSON.writeValueAsBytes(this);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Reads an event written by {@link #toJson()}; fails with the reason when it is not one. */
  public static OrderPlaced fromJson(byte[] json) {
    try {
      return JSON.readValue(json, OrderPlaced.class);
    } catch (IOException e) {
      throw new IllegalArgumentException("not an OrderPlaced event: " + e.getMessage(), e);
    }
  }
}
