package io.txbox.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The compatibility check users run in their own tests, on the shop's samples of OrderPlaced. */
class EventSamplesTest {
  private static final Path SAMPLES = Path.of("src", "test", "resources", "events");

  /** Version 4 drops the currency: every order is in euros now. */
  record OrderPlacedV4(String orderId, String customerId, String sku, int quantity, long amountMinor) {}

  @Test
  void everySampleOfEveryVersionReadsAsTodaysClass() {
    EventSamples.check(OrderPlaced.types(new ObjectMapper()), SAMPLES);
  }

  @Test
  void aRemovedFieldWithoutAnUpcasterFailsTheCheckAndPassesWithOne(@TempDir Path dir) throws Exception {
    copySamples(dir);
    EventTypes withoutUpcaster = v4(e -> e);
    assertThatThrownBy(() -> EventSamples.check(withoutUpcaster, dir)).isInstanceOf(AssertionError.class)
        .hasMessageContaining("v1.json").hasMessageContaining("currency");
    assertThat(EventSamples.problems(withoutUpcaster, dir)).hasSize(4 + 1) // each sample, and v4 has none
        .anyMatch(p -> p.contains("OrderPlaced version 4: no sample"));

    Files.writeString(dir.resolve("OrderPlaced").resolve("v4.json"),
        "{\"orderId\":\"o-1\",\"customerId\":\"c-9\",\"sku\":\"sku-1\",\"quantity\":2,\"amountMinor\":1250}");
    EventSamples.check(v4(e -> {
      e.remove("currency");
      return e;
    }), dir);
  }

  private static EventTypes v4(Upcaster dropCurrency) {
    return EventTypes.builder(new ObjectMapper())
        .type("OrderPlaced", 4, OrderPlacedV4.class, "orders", OrderPlacedV4::sku)
        .upcast("OrderPlaced", 1, OrderPlaced::renameCustomerAndAddCurrency)
        .upcast("OrderPlaced", 2, OrderPlaced::amountInMinorUnits)
        .upcast("OrderPlaced", 3, dropCurrency)
        .build();
  }

  private static void copySamples(Path dir) throws Exception {
    Path to = Files.createDirectories(dir.resolve("OrderPlaced"));
    try (var files = Files.list(SAMPLES.resolve("OrderPlaced"))) {
      for (Path f : files.toList()) {
        Files.copy(f, to.resolve(f.getFileName()));
      }
    }
  }
}
