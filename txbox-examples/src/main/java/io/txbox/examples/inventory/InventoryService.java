package io.txbox.examples.inventory;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.examples.ShopSchema;
import io.txbox.examples.orders.OrderPlaced;
import io.txbox.examples.orders.ShopEvents;
import io.txbox.jackson.EventTypes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reserves stock for each placed order, in the inbox's transaction: the reservation, the stock
 * level and the inbox record commit together, so a redelivered event reserves nothing twice.
 *
 * <pre>{@code
 * Inbox inbox = Inbox.create(dataSource, PostgresInboxStore.builder().build());
 * inbox.receive("inventory", message, new InventoryService("shop"));
 * }</pre>
 *
 * <p>The stock row of the SKU is locked first, so reservations of one SKU are applied one at a
 * time, and each records whether its order came right after the previous one
 * ({@code in_order}): the check that per-key order held end to end. Orders of every version
 * ({@link OrderPlaced}) are read as version 3; one it cannot read is a permanent failure, which
 * the subscriber dead-letters while other SKUs go on.
 */
public final class InventoryService implements InboxHandler {
  private static final Logger log = LoggerFactory.getLogger(InventoryService.class);

  /** For reading only: the topic the types would send to does not matter here. */
  private final EventTypes events = ShopEvents.types(new ObjectMapper(), "orders");
  private final String lockStock;
  private final String reserve;
  private final String record;

  /** An inventory service on the tables in {@code schema}. */
  public InventoryService(String schema) {
    ShopSchema.requireName(schema);
    this.lockStock = "SELECT last_sequence FROM " + schema + ".stock WHERE sku = ? FOR UPDATE";
    this.reserve = "UPDATE " + schema + ".stock SET reserved = reserved + ?, last_sequence = ? WHERE sku = ?";
    this.record = "INSERT INTO " + schema + ".reservation (order_id, sku, quantity, sequence, in_order,"
        + " customer_id, amount_minor) VALUES (?, ?, ?, ?, ?, ?, ?)";
  }

  @Override
  public void handle(Connection transaction, Message message, String idempotencyKey) throws SQLException {
    OrderPlaced order = events.read(message, OrderPlaced.class);
    long previous = lockStock(transaction, order.sku());
    boolean inOrder = order.sequence() == previous + 1;
    if (!inOrder) {
      log.warn("order {} of {} is number {}, but the last one reserved was number {}",
          order.orderId(), order.sku(), order.sequence(), previous);
    }
    try (PreparedStatement p = transaction.prepareStatement(reserve)) {
      p.setLong(1, order.quantity());
      p.setLong(2, Math.max(previous, order.sequence()));
      p.setString(3, order.sku());
      p.executeUpdate();
    }
    try (PreparedStatement p = transaction.prepareStatement(record)) {
      p.setObject(1, order.orderId());
      p.setString(2, order.sku());
      p.setInt(3, order.quantity());
      p.setLong(4, order.sequence());
      p.setBoolean(5, inOrder);
      p.setString(6, order.customerId());
      p.setLong(7, order.amountMinor());
      p.executeUpdate();
    }
  }

  private long lockStock(Connection transaction, String sku) throws SQLException {
    try (PreparedStatement p = transaction.prepareStatement(lockStock)) {
      p.setString(1, sku);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException("no stock row for SKU '" + sku + "'");
        }
        return rs.getLong(1);
      }
    }
  }
}
