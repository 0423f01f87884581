package io.txbox.spring;

import java.util.Map;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthComponent;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration;
import org.springframework.context.ApplicationContext;

/**
 * The little that the starter's tests do differently on Spring Boot 3, whose types Boot 4 moved:
 * everything else in src/test/java runs unchanged on both lines. txbox-spring-boot4-tests holds
 * the Boot 4 twin of this class.
 */
final class BootLine {
  private BootLine() {}

  /** The DataSource, its transaction manager and Spring's transaction support. */
  static Class<?>[] jdbcAutoConfigurations() {
    return new Class<?>[] {DataSourceAutoConfiguration.class,
        DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class};
  }

  /** The actuator's answer for one health indicator, as {@code /actuator/health/{path}} gives it. */
  static HealthView health(ApplicationContext context, String path) {
    HealthComponent health = context.getBean(HealthEndpoint.class).healthForPath(path);
    return new HealthView(health.getStatus().getCode(),
        health instanceof Health indicated ? indicated.getDetails() : Map.of());
  }
}
