package io.txbox.spring;

import io.txbox.Janitor;
import io.txbox.Relay;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.spring.internal.ContextBound;
import io.txbox.spring.internal.InboxListeners;
import io.txbox.spring.internal.TroubledLoops;
import io.txbox.spring.internal.TxboxHealthIndicator;
import java.time.Clock;
import java.util.Optional;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * The actuator health indicator {@code txbox}: DOWN when this application's relay has stopped or
 * when the oldest unrelayed event is older than {@code txbox.health.max-pending-age} (default 5
 * minutes). Its {@code troubled} detail names the background loops (relay, janitor, listeners)
 * whose last step failed; they go on trying, so that alone does not make it DOWN. Turn it off
 * with {@code management.health.txbox.enabled=false}.
 *
 * <pre>{@code
 * curl localhost:8080/actuator/health/txbox
 * {"status":"UP","details":{"subscription":"default","relay":"running","pending":0,...}}
 * }</pre>
 */
@AutoConfiguration(after = TxboxAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(PostgresOutboxStore.class)
@ConditionalOnEnabledHealthIndicator("txbox")
public class TxboxHealthAutoConfiguration {

  /** The indicator, named {@code txbox} after its bean. */
  @Bean(name = "txboxHealthIndicator")
  public HealthIndicator txboxHealthIndicator(
      PostgresOutboxStore store, TxboxProperties properties, ObjectProvider<ContextBound<Relay>> relay,
      ObjectProvider<ContextBound<Janitor>> janitor, ObjectProvider<InboxListeners> listeners) {
    return new TxboxHealthIndicator(store, properties.relay().subscription(),
        Optional.ofNullable(relay.getIfAvailable()), properties.health().maxPendingAge(),
        properties.metrics().backlogLimitPerBucket(), Clock.systemUTC(),
        () -> TroubledLoops.of(relay.getIfAvailable(), janitor.getIfAvailable(), listeners.getIfAvailable()));
  }
}
