package io.txbox.examples.spring;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.examples.ShopSchema;
import io.txbox.examples.orders.OrderPlaced;
import io.txbox.examples.orders.ShopEvents;
import io.txbox.jackson.EventHandlers;
import io.txbox.jackson.EventTypes;
import io.txbox.spring.InboxListener;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.PropertySource;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * An order service on Spring Boot with the txbox starter: {@code POST /orders} writes an order and
 * its {@code OrderPlaced} event in one {@code @Transactional} method ({@link Orders}), the
 * starter's relay publishes the event to Kafka, and an {@link InboxListener} reserves stock once
 * per order however often Kafka delivers it. The events are typed ({@link ShopEvents}, written and
 * read with Spring's own {@code ObjectMapper}): the listener reads {@code OrderPlaced} of every
 * version as version 3. {@code /actuator/health/txbox} and
 * {@code /actuator/metrics/txbox.*} show the outbox; with the OpenTelemetry Java agent, one trace
 * shows the request, the publish and the reservation.
 *
 * <pre>{@code
 * java -cp ... io.txbox.examples.spring.SpringOrderService \
 *     --spring.datasource.url=jdbc:postgresql://localhost/shop --txbox.kafka.bootstrap-servers=kafka:9092
 * curl -X POST 'localhost:8080/orders?customer=c-1&sku=sku-1&quantity=2'
 * }</pre>
 */
@SpringBootApplication
@PropertySource("classpath:io/txbox/examples/spring/order-service.properties")
public class SpringOrderService {

  /** Starts the service. */
  public static void main(String[] args) {
    SpringApplication.run(SpringOrderService.class, args);
  }

  /** The shop's tables, created on first start, with {@code shop.products} SKUs in stock. */
  @Bean
  ApplicationRunner shopTables(JdbcTemplate jdbc, @Value("${shop.schema}") String schema,
      @Value("${shop.products}") int products) {
    return args -> {
      Boolean exists = jdbc.queryForObject("SELECT to_regclass(?) IS NOT NULL", Boolean.class, schema + ".orders");
      if (!Boolean.TRUE.equals(exists)) {
        jdbc.execute((ConnectionCallback<Void>) c -> {
          ShopSchema.create(c, schema, products);
          return null;
        });
      }
    };
  }

  /**
   * The shop's event types over Spring's {@code ObjectMapper}; the starter's outbox writes with
   * them ({@code outbox.sendEvent(order)}).
   */
  @Bean
  EventTypes shopEvents(ObjectMapper mapper, @Value("${shop.topic}") String topic) {
    return ShopEvents.types(mapper, topic);
  }

  /** Reserves stock for each order, once, in the transaction that records the event. */
  @Bean
  InboxListener inventory(EventTypes events, JdbcTemplate jdbc, @Value("${shop.schema}") String schema,
      @Value("${shop.topic}") String topic) {
    String reserve = "UPDATE " + schema + ".stock SET reserved = reserved + ?, last_sequence = ? WHERE sku = ?";
    String record = "INSERT INTO " + schema + ".reservation (order_id, sku, quantity, sequence, in_order,"
        + " customer_id, amount_minor) VALUES (?, ?, ?, ?, ?, ?, ?)";
    return InboxListener.consumer("spring-inventory").from(topic).handler(EventHandlers.builder(events)
        .on(OrderPlaced.class, (tx, order, meta) -> {
          Long last = jdbc.queryForObject("SELECT last_sequence FROM " + schema + ".stock WHERE sku = ? FOR UPDATE",
              Long.class, order.sku());
          jdbc.update(reserve, order.quantity(), order.sequence(), order.sku());
          jdbc.update(record, order.orderId(), order.sku(), order.quantity(), order.sequence(),
              last != null && order.sequence() == last + 1, order.customerId(), order.amountMinor());
        }).build());
  }
}
