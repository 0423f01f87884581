package io.txbox.jdbc.support;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A data source that never connects, for a store built only to render its migration scripts:
 * every connection attempt fails, saying so.
 *
 * <pre>{@code
 * List<MigrationScript> scripts = database.outboxStore(new NoConnections(), settings).migrationScripts();
 * }</pre>
 */
public final class NoConnections implements DataSource {
  @Override
  public Connection getConnection() throws SQLException {
    throw new SQLException("this store renders SQL only and connects to no database");
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return getConnection();
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException("no logger");
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
