package io.txbox.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.RetryPolicy;
import io.txbox.UnprocessableMessageException;
import io.txbox.postgres.PostgresOutboxStore;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class EventTypesTest {
  private final EventTypes types = OrderPlaced.types(new ObjectMapper());

  @Test
  void everyOldVersionIsReadAsTheCurrentOne() {
    OrderPlaced expected = new OrderPlaced("o-1", "c-9", "sku-1", 2, "EUR", 1250);
    assertThat(types.read(old(1, "{\"orderId\":\"o-1\",\"customer\":\"c-9\",\"sku\":\"sku-1\",\"quantity\":2,"
        + "\"amount\":\"12.50\"}"))).isEqualTo(expected);
    assertThat(types.read(old(2, "{\"orderId\":\"o-1\",\"customerId\":\"c-9\",\"sku\":\"sku-1\",\"quantity\":2,"
        + "\"currency\":\"EUR\",\"amount\":\"12.50\"}"))).isEqualTo(expected);
    assertThat(types.read(types.toMessage(expected))).isEqualTo(expected);
  }

  @Test
  void aMessageCarriesTheTypesNameCurrentVersionDestinationKeyAndJson() {
    Message m = types.toMessage(new OrderPlaced("o-1", "c-9", "sku-1", 2, "EUR", 1250));
    assertThat(m.type()).isEqualTo("OrderPlaced");
    assertThat(m.version()).isEqualTo(3);
    assertThat(m.destination()).isEqualTo("orders");
    assertThat(m.key()).isEqualTo("sku-1");
    assertThat(m.contentType()).isEqualTo("application/json");
  }

  @Test
  void theApplicationsObjectMapperSettingsAreUsedBothWays() {
    ObjectMapper snakeCase = new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
    EventTypes snake = EventTypes.builder(snakeCase).type("OrderPlaced", 3, OrderPlaced.class, "orders", OrderPlaced::sku)
        .upcast("OrderPlaced", 1, e -> e).upcast("OrderPlaced", 2, e -> e).build();
    OrderPlaced order = new OrderPlaced("o-1", "c-9", "sku-1", 2, "EUR", 1250);
    Message m = snake.toMessage(order);
    assertThat(new String(m.payload(), StandardCharsets.UTF_8)).contains("\"customer_id\":\"c-9\"", "\"amount_minor\":1250");
    assertThat(snake.read(m)).isEqualTo(order);
  }

  @Test
  void readingAsAClassRefusesAnEventOfAnotherTypeForGood() {
    EventTypes two = EventTypes.builder(new ObjectMapper())
        .type("OrderPlaced", 1, Placed.class, "orders", Placed::sku)
        .type("OrderCancelled", 1, Cancelled.class, "orders", Cancelled::sku).build();
    Message cancelled = two.toMessage(new Cancelled("sku-1"));
    assertThat(two.read(cancelled, Cancelled.class)).isEqualTo(new Cancelled("sku-1"));
    assertThatThrownBy(() -> two.read(cancelled, Placed.class)).isInstanceOf(UnprocessableMessageException.class)
        .hasMessageContaining("is of type OrderCancelled, not OrderPlaced as expected");
  }

  @Test
  void anOutboxWithoutEventTypesSaysHowToSendAnEventObject() {
    PostgresOutboxStore store = PostgresOutboxStore.builder(new PGSimpleDataSource()).build(); // never reached
    Outbox plain = Outbox.create(store.writer());
    assertThatThrownBy(() -> plain.sendEvent(new Cancelled("sku-1"))).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Outbox.builder(store).events(eventTypes)");
    Outbox typed = Outbox.builder(store.writer()).events(types).build();
    assertThatThrownBy(() -> typed.sendEvent(new Cancelled("sku-1"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Cancelled is not registered");
  }

  record Placed(String sku) {}

  record Cancelled(String sku) {}

  @Test
  void aNewerVersionThanTheConsumerKnowsIsAPermanentFailureNamingBothVersions() {
    Message v4 = old(4, "{\"orderId\":\"o-1\"}");
    assertThatThrownBy(() -> types.read(v4)).isInstanceOf(UnprocessableMessageException.class)
        .hasMessageContaining("OrderPlaced version 4, newer than version 3 that this consumer knows");
    assertThat(RetryPolicy.defaults().isPermanent(new UnprocessableMessageException("x"))).isTrue();
  }

  @Test
  void aBodyThatCannotBeReadIsAPermanentFailureNamingTheTypeAndVersion() {
    assertThatThrownBy(() -> types.read(old(3, "not json"))).isInstanceOf(UnprocessableMessageException.class)
        .hasMessageContaining("(OrderPlaced) is not JSON");
    assertThatThrownBy(() -> types.read(old(1, "{\"orderId\":\"o-1\",\"amount\":\"twelve\"}")))
        .isInstanceOf(UnprocessableMessageException.class)
        .hasMessageContaining("the upcaster of OrderPlaced from version 2 to 3 failed");
  }

  @Test
  void aVersionWithoutAnUpcasterToTheNextIsRefusedAtBuildTime() {
    assertThatThrownBy(() -> EventTypes.builder(new ObjectMapper())
        .type("OrderPlaced", 3, OrderPlaced.class, "orders", OrderPlaced::sku)
        .upcast("OrderPlaced", 1, e -> e).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("OrderPlaced is at version 3 but has no upcaster from version 2 to 3");
  }

  @Test
  void aRenamedTypeIsReadUnderItsNewName() {
    EventTypes renamed = EventTypes.builder(new ObjectMapper())
        .type("OrderPlaced", 3, OrderPlaced.class, "orders", OrderPlaced::sku)
        .upcast("OrderPlaced", 1, OrderPlaced::renameCustomerAndAddCurrency)
        .upcast("OrderPlaced", 2, OrderPlaced::amountInMinorUnits)
        .renamed("OrderCreated", "OrderPlaced").build();
    Message created = Message.builder().type("OrderCreated").version(1).destination("orders").key("sku-1")
        .payload(("{\"orderId\":\"o-1\",\"customer\":\"c-9\",\"sku\":\"sku-1\",\"quantity\":2,\"amount\":\"1\"}")
            .getBytes(StandardCharsets.UTF_8)).build();
    assertThat(renamed.read(created)).isEqualTo(new OrderPlaced("o-1", "c-9", "sku-1", 2, "EUR", 100));
  }

  /** An event as an older version of the service wrote it. */
  static Message old(int version, String json) {
    return Message.builder().type("OrderPlaced").version(version).destination("orders").key("sku-1")
        .payload(json.getBytes(StandardCharsets.UTF_8), "application/json").build();
  }
}
