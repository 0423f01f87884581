package io.txbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxException;
import io.txbox.jdbc.spi.Transactions;
import io.txbox.testkit.TestDatabase;
import java.sql.PreparedStatement;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class TransactionsTest {
  private TestDatabase db;

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void workThatLosesItsConnectionReportsItsOwnErrorNotTheFailedRestoreOfTheIsolationLevel() {
    Transactions transactions = new Transactions(db.dataSource());
    assertThatThrownBy(() -> transactions.inReadCommitted("taking leases", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT pg_terminate_backend(pg_backend_pid())")) {
        return p.execute();
      }
    })).isInstanceOf(TxboxException.class)
        .hasMessageStartingWith("taking leases failed: ")
        .hasMessageContaining("terminating connection")
        .satisfies(e -> assertThat(e.getCause().getSuppressed()).isNotEmpty());
  }
}
