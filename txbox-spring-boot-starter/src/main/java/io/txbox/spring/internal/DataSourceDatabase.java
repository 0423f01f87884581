package io.txbox.spring.internal;

import io.txbox.jdbc.spi.Database;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * The txbox {@link Database} of the application's {@code DataSource}, among the database modules
 * on the class path, so that the starter builds each store through it and names no database.
 */
public final class DataSourceDatabase {
  private DataSourceDatabase() {}

  /**
   * The database {@code configuredUrl} ({@code spring.datasource.url}) names; without one, the only
   * database module on the class path, or else the one the {@code DataSource}'s connection names.
   *
   * @throws IllegalStateException when no module on the class path takes the URL, naming the URL's
   *     kind and the modules there are
   */
  public static Database of(DataSource dataSource, String configuredUrl) {
    List<Database> known = Database.known();
    if (configuredUrl == null && known.size() == 1) {
      return known.get(0); // no connection at start-up: the database may still be starting
    }
    String url = configuredUrl != null ? configuredUrl : connectionUrl(dataSource);
    return known.stream().filter(d -> url != null && d.accepts(url)).findFirst()
        .orElseThrow(() -> new IllegalStateException("txbox has no database module for " + kind(url)
            + " on the class path; it has " + names(known) + ". Add io.txbox:txbox-postgres for PostgreSQL"
            + " (jdbc:postgresql:; io.txbox:txbox-jdbc no longer brings it) or io.txbox:txbox-mariadb for MariaDB (jdbc:mariadb:)"));
  }

  private static String connectionUrl(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      return c.getMetaData().getURL();
    } catch (SQLException e) {
      throw new IllegalStateException("txbox cannot tell which database the DataSource reaches: set"
          + " spring.datasource.url, or make the database reachable at start-up (" + e.getMessage() + ")", e);
    }
  }

  /** The URL's scheme alone, such as {@code jdbc:h2:}: the rest may hold a password. */
  private static String kind(String url) {
    if (url == null) {
      return "a DataSource whose driver tells no URL";
    }
    int second = url.indexOf(':', url.indexOf(':') + 1);
    return second > 0 ? url.substring(0, second + 1) : "a URL that is not jdbc:<database>:";
  }

  private static String names(List<Database> known) {
    return known.isEmpty() ? "none" : known.stream().map(Database::name).collect(Collectors.joining(", "));
  }
}
