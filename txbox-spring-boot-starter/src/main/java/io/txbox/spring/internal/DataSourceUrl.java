package io.txbox.spring.internal;

import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Conditions on the database {@code spring.datasource.url} names, read before any bean exists:
 * which store the starter builds, PostgreSQL's or MariaDB's.
 */
public final class DataSourceUrl {
  private DataSourceUrl() {}

  /** {@code spring.datasource.url} is a MariaDB Connector/J URL. */
  public static final class MariaDb implements Condition {
    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
      return isMariaDb(context);
    }
  }

  /** Anything else, including no URL at all (an application's own {@code DataSource} bean): PostgreSQL. */
  public static final class NotMariaDb implements Condition {
    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
      return !isMariaDb(context);
    }
  }

  private static boolean isMariaDb(ConditionContext context) {
    String url = context.getEnvironment().getProperty("spring.datasource.url", "");
    return url.startsWith("jdbc:mariadb:");
  }
}
