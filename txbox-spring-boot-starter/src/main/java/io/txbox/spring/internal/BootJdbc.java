package io.txbox.spring.internal;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@link DataSourceConnection} from Spring Boot's own JDBC types, whose package each Boot line
 * names differently: one configuration per line, each active only where its types are.
 */
public final class BootJdbc {
  private BootJdbc() {}

  /** Spring Boot 3: {@code org.springframework.boot.autoconfigure.jdbc}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.autoconfigure.jdbc.DataSourceProperties")
  public static class Boot3 {
    /** The connection details Boot built the DataSource from, else its bound spring.datasource properties. */
    @Bean
    DataSourceConnection txboxDataSourceConnection(
        ObjectProvider<org.springframework.boot.autoconfigure.jdbc.JdbcConnectionDetails> details,
        ObjectProvider<org.springframework.boot.autoconfigure.jdbc.DataSourceProperties> properties) {
      var d = details.getIfAvailable();
      if (d != null) {
        return new DataSourceConnection(d.getJdbcUrl(), d.getUsername(), d.getPassword());
      }
      var p = properties.getIfAvailable();
      return p == null ? DataSourceConnection.NONE : new DataSourceConnection(p.getUrl(), p.getUsername(), p.getPassword());
    }
  }

  /** Spring Boot 4: {@code org.springframework.boot.jdbc.autoconfigure}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.jdbc.autoconfigure.DataSourceProperties")
  public static class Boot4 {
    /** The connection details Boot built the DataSource from, else its bound spring.datasource properties. */
    @Bean
    DataSourceConnection txboxDataSourceConnection(
        ObjectProvider<org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails> details,
        ObjectProvider<org.springframework.boot.jdbc.autoconfigure.DataSourceProperties> properties) {
      var d = details.getIfAvailable();
      if (d != null) {
        return new DataSourceConnection(d.getJdbcUrl(), d.getUsername(), d.getPassword());
      }
      var p = properties.getIfAvailable();
      return p == null ? DataSourceConnection.NONE : new DataSourceConnection(p.getUrl(), p.getUsername(), p.getPassword());
    }
  }
}
