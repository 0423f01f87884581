package io.txbox.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Message;
import io.txbox.jackson.EventSamples;
import io.txbox.jackson.EventTypes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The shop's events: every version kept under test resources still reads as today's class. */
class ShopEventsTest {
  private final EventTypes events = ShopEvents.types(new ObjectMapper(), "orders");

  @Test
  void everyVersionOfOrderPlacedStillReadsAsVersionThree() {
    EventSamples.check(events, Path.of("src", "test", "resources", "events"));
  }

  @Test
  void anOrderPlacedOfVersionOneReadsAsTheSameOrderInVersionThree() {
    Message v1 = Message.builder().type(ShopEvents.ORDER_PLACED).version(1).destination("orders").key("sku-7")
        .payload(("{\"orderId\":\"8d4e2f7a-0c1b-4e59-9a43-3f1c2b7d5e10\",\"customer\":\"customer-4\",\"sku\":\"sku-7\","
            + "\"quantity\":2,\"sequence\":41,\"amount\":\"25.00\"}").getBytes(StandardCharsets.UTF_8)).build();
    OrderPlaced today = new OrderPlaced(UUID.fromString("8d4e2f7a-0c1b-4e59-9a43-3f1c2b7d5e10"), "customer-4", "sku-7", 2,
        41, "EUR", 2500);
    assertThat(events.read(v1, OrderPlaced.class)).isEqualTo(today);
    assertThat(events.read(events.toMessage(today), OrderPlaced.class)).isEqualTo(today);
  }
}
