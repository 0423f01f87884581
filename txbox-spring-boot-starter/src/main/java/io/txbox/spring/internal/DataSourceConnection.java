package io.txbox.spring.internal;

/**
 * How Spring Boot connects the application's {@code DataSource}: its {@code JdbcConnectionDetails}
 * (a service connection, such as Testcontainers' or Docker Compose's, or else
 * {@code spring.datasource.*}), or the bound {@code DataSourceProperties} where the application
 * built its {@code DataSource} itself. txbox's own connections that mirror it (the logical relay's
 * replication connection, the relay's {@code LISTEN} connection) take their defaults from here.
 *
 * <pre>{@code
 * String url = properties.logical().jdbcUrl() != null ? properties.logical().jdbcUrl() : connection.url();
 * }</pre>
 *
 * @param url the JDBC URL, or null when Boot has none
 * @param username the user, or null
 * @param password the password, or null
 */
public record DataSourceConnection(String url, String username, String password) {
  /** Nothing known: no Boot JDBC auto-configuration ran. */
  public static final DataSourceConnection NONE = new DataSourceConnection(null, null, null);

  /** The password stays out of logs and error pages. */
  @Override
  public String toString() {
    return "DataSourceConnection[url=" + url + ", username=" + username + ", password=" + (password == null ? "null" : "***") + "]";
  }
}
