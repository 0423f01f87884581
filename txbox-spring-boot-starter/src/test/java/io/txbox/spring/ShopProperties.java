package io.txbox.spring;

import io.txbox.testkit.TestDatabase;
import java.util.function.Supplier;
import org.springframework.test.context.DynamicPropertyRegistry;

/** The properties every test application of this package needs: its database, schema and topic. */
final class ShopProperties {
  private ShopProperties() {}

  /** The machine's PostgreSQL, txbox and the shop in {@code db}'s schema, events to {@code topic}. */
  static void register(DynamicPropertyRegistry properties, Supplier<TestDatabase> db, String topic) {
    properties.add("spring.datasource.url", TestDatabase::jdbcUrl);
    properties.add("txbox.schema", () -> db.get().schema());
    properties.add("shop.schema", () -> db.get().schema());
    properties.add("shop.topic", () -> topic);
  }
}
