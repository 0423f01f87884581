package io.txbox.spring;

import java.util.Map;
import org.springframework.boot.health.actuate.endpoint.HealthDescriptor;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.actuate.endpoint.IndicatedHealthDescriptor;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ApplicationContext;

/**
 * The little that the starter's tests do differently on Spring Boot 4, which moved these types
 * into new modules: the Boot 4 twin of txbox-spring-boot-starter/src/test/boot3's class.
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
    HealthDescriptor health = context.getBean(HealthEndpoint.class).healthForPath(path);
    return new HealthView(health.getStatus().getCode(),
        health instanceof IndicatedHealthDescriptor indicated ? indicated.getDetails() : Map.of());
  }
}
