package io.txbox.examples.orders;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Outbox;
import io.txbox.examples.ShopSchema;
import io.txbox.jackson.EventTypes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

/**
 * Places orders: the order row and its {@code OrderPlaced} event are written in the caller's
 * transaction, so either both exist or neither does. The event's key is the SKU, so the orders of
 * one product reach consumers in the order they were placed. Every product costs 12.50 EUR.
 *
 * <pre>{@code
 * OrderService orders = new OrderService(Outbox.create(store), "shop", "orders");
 * try (Connection tx = dataSource.getConnection()) {
 *   tx.setAutoCommit(false);
 *   orders.place(tx, "customer-4", "sku-7", 2);
 *   tx.commit();
 * }
 * }</pre>
 */
public final class OrderService {
  /** The price of every product, in euro cents. */
  public static final long UNIT_PRICE_MINOR = 1250;

  private final Outbox outbox;
  private final EventTypes events;
  private final String countOrder;
  private final String readCount;
  private final String insertOrder;

  /** An order service writing into {@code schema} and publishing to {@code topic}. */
  public OrderService(Outbox outbox, String schema, String topic) {
    this.outbox = outbox;
    this.events = ShopEvents.types(new ObjectMapper(), topic);
    ShopSchema.requireName(schema);
    // Two statements, not UPDATE ... RETURNING, which MariaDB does not have: the row stays locked
    // by the update, so the count read next is this order's.
    this.countOrder = "UPDATE " + schema + ".order_counter SET placed = placed + 1 WHERE sku = ?";
    this.readCount = "SELECT placed FROM " + schema + ".order_counter WHERE sku = ?";
    this.insertOrder = "INSERT INTO " + schema + ".orders (id, sku, quantity, sequence) VALUES (?, ?, ?, ?)";
  }

  /** Places an order in {@code transaction}; the caller commits. */
  public OrderPlaced place(Connection transaction, String customerId, String sku, int quantity) throws SQLException {
    OrderPlaced order = new OrderPlaced(UUID.randomUUID(), customerId, sku, quantity, countOrder(transaction, sku),
        "EUR", quantity * UNIT_PRICE_MINOR);
    try (PreparedStatement p = transaction.prepareStatement(insertOrder)) {
      p.setObject(1, order.orderId());
      p.setString(2, sku);
      p.setInt(3, quantity);
      p.setLong(4, order.sequence());
      p.executeUpdate();
    }
    outbox.send(transaction, events.toMessage(order)); // OrderPlaced version 3, keyed by SKU
    return order;
  }

  private long countOrder(Connection transaction, String sku) throws SQLException {
    try (PreparedStatement p = transaction.prepareStatement(countOrder)) {
      p.setString(1, sku);
      if (p.executeUpdate() == 0) {
        throw new IllegalArgumentException("unknown SKU '" + sku + "': it has no row in order_counter");
      }
    }
    try (PreparedStatement p = transaction.prepareStatement(readCount)) {
      p.setString(1, sku);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
