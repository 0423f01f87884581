package io.txbox.examples.spring;

import io.txbox.Outbox;
import io.txbox.examples.orders.OrderPlaced;
import io.txbox.examples.orders.OrderService;
import java.sql.SQLException;
import java.util.List;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Places orders: the order row and its event commit together, or neither does.
 *
 * <pre>{@code
 * UUID id = orders.place("customer-4", "sku-1", 2);
 * }</pre>
 */
@Service
public class Orders {
  private final JdbcTemplate jdbc;
  private final Outbox outbox;
  private final String schema;

  Orders(JdbcTemplate jdbc, Outbox outbox, @Value("${shop.schema}") String schema) {
    this.jdbc = jdbc;
    this.outbox = outbox;
    this.schema = schema;
  }

  /** Writes the order and its {@code OrderPlaced} event in the caller's (or a new) transaction. */
  @Transactional
  public UUID place(String customerId, String sku, int quantity) throws SQLException {
    List<Long> counted = jdbc.queryForList(
        "UPDATE " + schema + ".order_counter SET placed = placed + 1 WHERE sku = ? RETURNING placed", Long.class, sku);
    if (counted.isEmpty()) {
      throw new IllegalArgumentException("no product " + sku);
    }
    long sequence = counted.get(0);
    UUID id = UUID.randomUUID();
    jdbc.update("INSERT INTO " + schema + ".orders (id, sku, quantity, sequence) VALUES (?, ?, ?, ?)",
        id, sku, quantity, sequence);
    // Written as JSON by the shop's EventTypes bean, keyed by SKU: the inventory sees each SKU's orders in order.
    outbox.sendEvent(new OrderPlaced(id, customerId, sku, quantity, sequence, "EUR",
        quantity * OrderService.UNIT_PRICE_MINOR));
    return id;
  }
}
