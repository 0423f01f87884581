package io.txbox.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The example services' own tables, in one schema (a database, on MariaDB): the order service's {@code orders} and
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
      for (String table : isMariaDb(c) ? mariaDbTables(schema) : postgresTables(schema)) {
        s.execute(table);
      }
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

  /**
   * Whether {@code c} is a MariaDB (or MySQL) connection, where the schema is a database and the
   * SQL differs here and there.
   */
  public static boolean isMariaDb(Connection c) throws SQLException {
    String product = c.getMetaData().getDatabaseProductName();
    return product.contains("MariaDB") || product.contains("MySQL");
  }

  private static List<String> postgresTables(String schema) {
    return List.of(
        "CREATE SCHEMA IF NOT EXISTS " + schema,
        "CREATE TABLE " + schema + ".order_counter (sku text PRIMARY KEY, placed bigint NOT NULL DEFAULT 0)",
        "CREATE TABLE " + schema + ".orders (id uuid PRIMARY KEY, sku text NOT NULL,"
            + " quantity integer NOT NULL, sequence bigint NOT NULL, placed_at timestamptz NOT NULL DEFAULT clock_timestamp())",
        "CREATE TABLE " + schema + ".stock (sku text PRIMARY KEY, on_hand bigint NOT NULL,"
            + " reserved bigint NOT NULL DEFAULT 0, last_sequence bigint NOT NULL DEFAULT 0)",
        "CREATE TABLE " + schema + ".reservation (id bigserial PRIMARY KEY, order_id uuid NOT NULL,"
            + " sku text NOT NULL, quantity integer NOT NULL, sequence bigint NOT NULL, in_order boolean NOT NULL,"
            + " customer_id text NOT NULL, amount_minor bigint NOT NULL,"
            + " reserved_at timestamptz NOT NULL DEFAULT clock_timestamp())",
        "CREATE TABLE " + schema + ".subscriber_stats (instance text PRIMARY KEY,"
            + " processed bigint NOT NULL, duplicates bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())");
  }

  /** The same tables on MariaDB; times are UTC. The index on order_id serves the demo's report. */
  private static List<String> mariaDbTables(String schema) {
    String options = " ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin";
    return List.of(
        "CREATE SCHEMA IF NOT EXISTS " + schema,
        "CREATE TABLE " + schema + ".order_counter (sku VARCHAR(255) PRIMARY KEY, placed BIGINT NOT NULL DEFAULT 0)"
            + options,
        "CREATE TABLE " + schema + ".orders (id CHAR(36) PRIMARY KEY, sku VARCHAR(255) NOT NULL,"
            + " quantity INT NOT NULL, sequence BIGINT NOT NULL,"
            + " placed_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)))" + options,
        "CREATE TABLE " + schema + ".stock (sku VARCHAR(255) PRIMARY KEY, on_hand BIGINT NOT NULL,"
            + " reserved BIGINT NOT NULL DEFAULT 0, last_sequence BIGINT NOT NULL DEFAULT 0)" + options,
        "CREATE TABLE " + schema + ".reservation (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_id CHAR(36) NOT NULL,"
            + " sku VARCHAR(255) NOT NULL, quantity INT NOT NULL, sequence BIGINT NOT NULL, in_order BOOLEAN NOT NULL,"
            + " customer_id VARCHAR(255) NOT NULL, amount_minor BIGINT NOT NULL,"
            + " reserved_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)), KEY reservation_order (order_id))" + options,
        "CREATE TABLE " + schema + ".subscriber_stats (instance VARCHAR(255) PRIMARY KEY,"
            + " processed BIGINT NOT NULL, duplicates BIGINT NOT NULL,"
            + " updated_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)))" + options);
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
