package io.txbox.spring;

import io.opentelemetry.api.trace.Span;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** A small order service and its inventory listener, as a user of the starter writes them. */
@SpringBootApplication
public class ShopApplication {

  @Bean
  InboxListener inventory(JdbcTemplate jdbc, @Value("${shop.schema}") String schema,
      @Value("${shop.source:${shop.topic}}") String source) {
    return InboxListener.consumer("inventory").from(source)
        .retryPolicy(RetryPolicy.builder().initialDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(200))
            .permanentWhen(e -> e instanceof IllegalArgumentException).build())
        .handler((message, idempotencyKey) -> {
          jdbc.update("INSERT INTO " + schema + ".handled (order_id, message_id, trace_id) VALUES (?, ?, ?)",
              message.key(), message.id(), Span.current().getSpanContext().getTraceId());
          if ("flaky".equals(message.key()) && FLAKY_FAILURES.incrementAndGet() <= 2) {
            throw new IllegalStateException("injected failure after the insert"); // which must roll back
          }
          if (REFUSED.equals(new String(message.payload(), StandardCharsets.UTF_8))) {
            throw new IllegalArgumentException("no such product"); // permanent: dead-lettered at once
          }
        });
  }

  /** A payload the listener refuses for good. */
  static final String REFUSED = "refused-for-good";

  /** Failed attempts at the order keyed {@code flaky}: its first two fail. */
  static final AtomicInteger FLAKY_FAILURES = new AtomicInteger();

  /** Writes an order and its event in one Spring transaction. */
  @Service
  public static class OrderService {
    private final JdbcTemplate jdbc;
    private final Outbox outbox;
    private final String schema;
    private final String topic;

    OrderService(JdbcTemplate jdbc, Outbox outbox, @Value("${shop.schema}") String schema,
        @Value("${shop.topic}") String topic) {
      this.jdbc = jdbc;
      this.outbox = outbox;
      this.schema = schema;
      this.topic = topic;
    }

    @Transactional
    public void place(String orderId) throws SQLException {
      jdbc.update("INSERT INTO " + schema + ".orders (id) VALUES (?)", orderId);
      outbox.send(Message.builder().type("OrderPlaced").destination(topic).key(orderId)
          .payload(orderId.getBytes(StandardCharsets.UTF_8), "text/plain").build());
    }

    @Transactional
    public void placeAndFail(String orderId) throws SQLException {
      place(orderId);
      throw new IllegalStateException("payment refused for " + orderId);
    }

    @Transactional
    public void send(Message message) throws SQLException {
      outbox.send(message);
    }
  }
}
