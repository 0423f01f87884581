package io.txbox.server;

import io.txbox.Outbox;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.TestMariaDb;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The exactly-once drill on MariaDB: three relays, one SIGKILLed every ~3 s. */
@FaultDrill
class MariaDbExactlyOnceDrillTest extends ExactlyOnceDrill {
  private TestMariaDb db;
  private MariaDbOutboxStore store;

  @BeforeEach
  void setUp() {
    db = TestMariaDb.create();
    store = MariaDbOutboxStore.builder(db.dataSource()).build();
    store.migrate();
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  @Override
  List<String> databaseArgs() {
    return List.of("--jdbc-url", db.jdbcUrl());
  }

  @Override
  DataSource dataSource() {
    return db.dataSource();
  }

  @Override
  Outbox outbox() {
    return Outbox.create(store.writer());
  }

  /** Per key, in position order: the order MariaDB's table relay sends in. */
  @Override
  Map<String, List<String>> expectedByKey() throws SQLException {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT `key`, id FROM " + store.operator().outboxTable() + " ORDER BY position");
        ResultSet rs = p.executeQuery()) {
      while (rs.next()) {
        byKey.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getString(2));
      }
    }
    return byKey;
  }

  @Override
  int owners() throws SQLException {
    return (int) db.queryLong("SELECT count(DISTINCT owner) FROM txbox_subscription WHERE lease_until > UTC_TIMESTAMP(6)");
  }

  @Override
  long deadLetters() throws SQLException {
    return db.queryLong("SELECT count(*) FROM txbox_dead_letter");
  }

  @Test
  void threeRelaysOneSigkilledEveryThreeSecondsDeliverEachOf40000EventsOnce() throws Exception {
    drainWhileKilling(3, 40_000);
  }
}
