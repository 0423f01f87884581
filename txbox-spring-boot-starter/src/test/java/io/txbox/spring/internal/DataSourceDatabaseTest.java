package io.txbox.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.testkit.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

class DataSourceDatabaseTest {

  @Test
  void theConfiguredUrlChoosesTheDatabase() {
    DriverManagerDataSource unreachable = new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/none");
    assertThat(DataSourceDatabase.of(unreachable, "jdbc:mariadb://127.0.0.1:1/shop").name()).isEqualTo("MariaDB");
    assertThat(DataSourceDatabase.of(unreachable, "jdbc:postgresql://127.0.0.1:1/shop").name())
        .isEqualTo("PostgreSQL");
  }

  @Test
  void withoutAConfiguredUrlTheConnectionTellsTheDatabase() {
    TestDatabase db = TestDatabase.create();
    try {
      assertThat(DataSourceDatabase.of(db.dataSource(), null).name()).isEqualTo("PostgreSQL");
    } finally {
      db.close();
    }
  }

  @Test
  void aUrlNoModuleTakesIsRefusedNamingItsKindAndTheModulesButNothingElseOfIt() {
    assertThatThrownBy(() -> DataSourceDatabase.of(new DriverManagerDataSource(), "jdbc:h2:mem:shop;PASSWORD=s3cret"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("txbox has no database module for jdbc:h2: on the class path; it has MariaDB,"
            + " PostgreSQL")
        .hasMessageContaining("io.txbox:txbox-postgres for PostgreSQL")
        .hasMessageContaining("io.txbox:txbox-mariadb for MariaDB")
        .hasMessageNotContaining("s3cret");
  }

  @Test
  void anUnreachableDataSourceWithoutAUrlAsksForTheSetting() {
    assertThatThrownBy(() -> DataSourceDatabase.of(new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/x"),
        null))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("set spring.datasource.url");
  }
}
