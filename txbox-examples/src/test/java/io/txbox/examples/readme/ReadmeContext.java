package io.txbox.examples.readme;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Publisher;
import java.sql.Connection;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What the README's Java snippets take from the text around them: the reader's own order type,
 * business writes and variables. {@link ReadmeSnippetsTest} compiles each snippet in a subclass
 * of this, so a snippet that no longer matches the API fails the build.
 */
@SuppressWarnings("unused")
public abstract class ReadmeContext {
  /** The reader's order. */
  public record Order(String id) {}

  /** The event of the "Evolving events" section, version 3. */
  public record OrderPlaced(String orderId, String customerId, String sku, int quantity, String currency,
      long amountMinor) {}

  /** The reader's stock service. */
  public interface Stock {
    void reserve(Connection tx, OrderPlaced order);
  }

  protected DataSource dataSource;
  protected PostgresOutboxStore store;
  protected Inbox inbox;
  protected Connection tx;
  protected Order order;
  protected String json;
  protected String traceparent;
  protected UUID id;
  protected Message message;
  protected InboxHandler handler;
  protected Publisher myPublisher;
  protected ObjectMapper objectMapper;
  protected Stock stock;
  protected Logger log;
  protected JdbcTemplate jdbc;
  protected Outbox outbox;

  protected void insertOrder(Connection tx, Order order) {}

  protected void reserveStock(Connection tx, Message message) {}

  protected void insertAll(Connection tx, List<Message> messages) {}
}
