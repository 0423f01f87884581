package io.txbox.mariadb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.Database.Capability;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestMariaDb;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * The databases the {@code txbox} command finds through {@link java.util.ServiceLoader}, with both
 * modules on the class path: each URL goes to its own, and each says what it can do and where its
 * tables are, against the real servers.
 */
class DatabasesTest {
  private static final Database.Tables DEFAULT_TABLES = new Database.Tables("public", "txbox_");

  @Test
  void eachUrlFindsItsDatabaseAndAnUnknownOneNone() {
    assertThat(Database.known()).extracting(Database::name).containsExactly("MariaDB", "PostgreSQL");
    assertThat(Database.forUrl("jdbc:mariadb://db:3306/shop")).get().extracting(Database::name).isEqualTo("MariaDB");
    assertThat(Database.forUrl("jdbc:postgresql://db:5432/shop")).get().extracting(Database::name)
        .isEqualTo("PostgreSQL");
    assertThat(Database.forUrl("jdbc:h2:mem:shop")).isEmpty();
  }

  @Test
  void mariaDbHasNoneOfWhatOnlyPostgresqlHas() {
    assertThat(Database.forUrl("jdbc:mariadb://db:3306/shop").orElseThrow().capabilities()).isEmpty();
    assertThat(Database.forUrl("jdbc:postgresql://db:5432/shop").orElseThrow().capabilities())
        .contains(Capability.SCHEMAS, Capability.NOTIFY, Capability.PARTITIONS, Capability.LOGICAL_DECODING);
  }

  @Test
  void eachFindsItsOutboxTableOnlyOnceMigrated() throws Exception {
    Database mariaDb = Database.forUrl("jdbc:mariadb:").orElseThrow();
    try (TestMariaDb db = TestMariaDb.create()) {
      assertThat(mariaDb.hasOutboxTable(db.dataSource(), DEFAULT_TABLES)).isFalse();
      MariaDbOutboxStore.builder(db.dataSource()).build().migrate();
      assertThat(mariaDb.hasOutboxTable(db.dataSource(), DEFAULT_TABLES)).isTrue();
      assertThat(mariaDb.hasOutboxTable(db.dataSource(), new Database.Tables(null, "other_"))).isFalse();
    }
    Database postgres = Database.forUrl("jdbc:postgresql:").orElseThrow();
    try (TestDatabase db = TestDatabase.create()) {
      Database.Tables tables = new Database.Tables(db.schema(), "txbox_");
      assertThat(postgres.hasOutboxTable(db.dataSource(), tables)).isFalse();
      postgres.operatorStore(db.dataSource(), tables).migrate();
      assertThat(postgres.hasOutboxTable(db.dataSource(), tables)).isTrue();
      assertThat(postgres.outboxTable(db.dataSource(), tables)).isEqualTo(db.schema() + ".txbox_outbox");
    }
  }

  @Test
  void eachGivesAnUnpooledDataSourceWhoseSessionIdIsAskedWithItsOwnQuery() throws Exception {
    try (TestMariaDb db = TestMariaDb.create()) {
      assertThat(sessionIdTwice(Database.forUrl("jdbc:mariadb:").orElseThrow(), db.jdbcUrl())).isTrue();
    }
    assertThat(sessionIdTwice(Database.forUrl("jdbc:postgresql:").orElseThrow(), TestDatabase.jdbcUrl())).isTrue();
  }

  @Test
  void anUnpooledDataSourceOfAnotherDatabasesUrlIsRefusedNamingTheKindOfUrl() {
    assertThatThrownBy(() -> Database.forUrl("jdbc:postgresql:").orElseThrow()
        .unpooledDataSource("jdbc:mariadb://db:3306/shop", null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jdbc:postgresql://host:5432/database");
  }

  @Test
  void aUrlTheDriverCannotReadIsRefusedWithoutItsPassword() {
    assertThatThrownBy(() -> Database.forUrl("jdbc:postgresql:").orElseThrow()
        .unpooledDataSource("jdbc:postgresql://db:notaport/shop?password=s3cret", null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot read the JDBC URL")
        .hasMessageNotContaining("s3cret");
  }

  @Test
  void onlyPostgresqlsDriverKeepsSomethingOnTheServerThatAPoolerBreaks() {
    assertThat(Database.forUrl("jdbc:postgresql:").orElseThrow().perTransactionPoolerProperties())
        .containsEntry("prepareThreshold", "0");
    assertThat(Database.forUrl("jdbc:mariadb:").orElseThrow().perTransactionPoolerProperties()).isEmpty();
  }

  /** Whether one connection of the database's unpooled data source answers the same session id twice. */
  private static boolean sessionIdTwice(Database database, String url) throws Exception {
    try (Connection c = database.unpooledDataSource(url, null, null).getConnection();
        Statement s = c.createStatement()) {
      long first = sessionId(s, database);
      return first > 0 && sessionId(s, database) == first;
    }
  }

  private static long sessionId(Statement s, Database database) throws Exception {
    try (ResultSet rs = s.executeQuery(database.sessionIdQuery())) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
