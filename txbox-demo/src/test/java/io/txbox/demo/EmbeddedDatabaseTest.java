package io.txbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.JdkNeutral;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import org.junit.jupiter.api.Test;

@JdkNeutral
class EmbeddedDatabaseTest {

  @Test
  void startsAServerThatTracksCommitTimesAndRemovesItOnClose() throws Exception {
    String url;
    try (EmbeddedDatabase db = EmbeddedDatabase.start(false)) {
      url = db.jdbcUrl();
      try (Connection c = DriverManager.getConnection(url);
          ResultSet rs = c.createStatement().executeQuery(
              "SELECT current_setting('server_version_num')::int, current_setting('track_commit_timestamp')")) {
        rs.next();
        assertThat(rs.getInt(1)).isGreaterThanOrEqualTo(170000);
        assertThat(rs.getString(2)).isEqualTo("on");
      }
    }
    assertThat(canConnect(url)).isFalse();
  }

  private static boolean canConnect(String url) {
    try (Connection c = DriverManager.getConnection(url + "&connectTimeout=2")) {
      return true;
    } catch (Exception e) {
      return false;
    }
  }
}
