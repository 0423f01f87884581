package io.txbox.spring;

import io.txbox.Janitor;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.spring.internal.Boot3HealthIndicator;
import io.txbox.spring.internal.Boot4HealthIndicator;
import io.txbox.spring.internal.TroubledLoops;
import io.txbox.spring.internal.TxboxHealthCheck;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The actuator health indicator {@code txbox}: DOWN when this application's relay has stopped or
 * when the oldest unrelayed event is older than {@code txbox.health.max-pending-age} (default 5
 * minutes); with {@code txbox.relay.source=logical} also when the slot is missing or invalidated,
 * and the details show the slot's lag and retained WAL in bytes. Its {@code troubled} detail names the background loops (relay, janitor, listeners)
 * whose last step failed; they go on trying, so that alone does not make it DOWN. Turn it off
 * with {@code management.health.txbox.enabled=false}. The same indicator on Spring Boot 3 and 4.
 *
 * <pre>{@code
 * curl localhost:8080/actuator/health/txbox
 * {"status":"UP","details":{"subscription":"default","relay":"running","pending":0,...}}
 * }</pre>
 */
@AutoConfiguration(after = TxboxAutoConfiguration.class)
@ConditionalOnBean(JdbcOutboxStore.class)
public class TxboxHealthAutoConfiguration {

  /** Spring Boot 3: the actuator's own health types. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
  @org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator("txbox")
  static class Boot3 {
    /** The indicator, named {@code txbox} after its bean. */
    @Bean(name = "txboxHealthIndicator")
    Boot3HealthIndicator txboxHealthIndicator(
        RelayState relay, ObjectProvider<TxboxService<Janitor>> janitor, ObjectProvider<InboxListeners> listeners) {
      return new Boot3HealthIndicator(check(relay, janitor, listeners));
    }
  }

  /**
   * Spring Boot 4: health types in spring-boot-health. Never beside Boot 3's actuator, where that
   * jar is only this module's compile-time dependency.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  @ConditionalOnMissingClass("org.springframework.boot.actuate.health.HealthIndicator")
  @org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator("txbox")
  static class Boot4 {
    /** The indicator, named {@code txbox} after its bean. */
    @Bean(name = "txboxHealthIndicator")
    Boot4HealthIndicator txboxHealthIndicator(
        RelayState relay, ObjectProvider<TxboxService<Janitor>> janitor, ObjectProvider<InboxListeners> listeners) {
      return new Boot4HealthIndicator(check(relay, janitor, listeners));
    }
  }

  private static TxboxHealthCheck check(
      RelayState relay, ObjectProvider<TxboxService<Janitor>> janitor, ObjectProvider<InboxListeners> listeners) {
    return new TxboxHealthCheck(relay,
        () -> TroubledLoops.of(relay, janitor.getIfAvailable(), listeners.getIfAvailable()));
  }
}
