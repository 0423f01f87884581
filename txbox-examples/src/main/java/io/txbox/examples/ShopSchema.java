package io.txbox.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Pattern;

/**
 * The example services' own tables, in one schema: the order service's {@code orders} and
 * {@code order_counter}, the inventory service's {@code stock} and {@code reservation}, and
 * {@code subscriber_stats}, where each inventory process reports what its subscriber counted.
 *
 * <pre>{@code
 * try (Connection c = dataSource.getConnection()) {
 *   ShopSchema.create(c, "shop", 50);
 * }
 * }</pre>
 *
 * <p>{@code reservation} has no unique key on the order on purpose: a side effect applied twice
 * would show as two rows, which is what the demo's report counts.
 */
public final class ShopSchema {
  private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

  private ShopSchema() {}

  /** The SKU of product {@code n}: the key of its orders' events. */
  public static String sku(int n) {
    return "sku-" + n;
  }

  /** Creates the tables in {@code schema} and stocks {@code products} SKUs. Autocommit is fine. */
  public static void create(Connection c, String schema, int products) throws SQLException {
    requireName(schema);
    try (Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
      s.execute("CREATE TABLE " + schema + ".order_counter (sku text PRIMARY KEY, placed bigint NOT NULL DEFAULT 0)");
      s.execute("CREATE TABLE " + schema + ".orders (id uuid PRIMARY KEY, sku text NOT NULL,"
          + " quantity integer NOT NULL, sequence bigint NOT NULL, placed_at timestamptz NOT NULL DEFAULT clock_timestamp())");
      s.execute("CREATE TABLE " + schema + ".stock (sku text PRIMARY KEY, on_hand bigint NOT NULL,"
          + " reserved bigint NOT NULL DEFAULT 0, last_sequence bigint NOT NULL DEFAULT 0)");
      s.execute("CREATE TABLE " + schema + ".reservation (id bigserial PRIMARY KEY, order_id uuid NOT NULL,"
          + " sku text NOT NULL, quantity integer NOT NULL, sequence bigint NOT NULL, in_order boolean NOT NULL,"
          + " customer_id text NOT NULL, amount_minor bigint NOT NULL, reserved_at timestamptz NOT NULL DEFAULT clock_timestamp())");
      s.execute("CREATE TABLE " + schema + ".subscriber_stats (instance text PRIMARY KEY,"
          + " processed bigint NOT NULL, duplicates bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())");
    }
    try (PreparedStatement counter = c.prepareStatement("INSERT INTO " + schema + ".order_counter (sku) VALUES (?)");
        PreparedStatement stock = c.prepareStatement("INSERT INTO " + schema + ".stock (sku, on_hand) VALUES (?, 1000000000)")) {
      for (int n = 0; n < products; n++) {
        counter.setString(1, sku(n));
        counter.addBatch();
        stock.setString(1, sku(n));
        stock.addBatch();
      }
      counter.executeBatch();
      stock.executeBatch();
    }
  }

  /** Checks a schema name before it is put into SQL. */
  public static String requireName(String schema) {
    if (schema == null || !NAME.matcher(schema).matches()) {
      throw new IllegalArgumentException("schema must be 1 to 63 of a-z 0-9 _, starting with a letter or _, was '"
          + schema + "'");
    }
    return schema;
  }
}
