package io.txbox.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.micrometer.BacklogMeters;
import io.txbox.micrometer.InboxMeters;
import io.txbox.micrometer.RelayMeters;
import io.txbox.spring.internal.InboxListeners;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer meters for txbox, when txbox-micrometer and a {@code MeterRegistry} are present: the
 * relay's counters and lag timer ({@link RelayMeters}), the backlog gauges of the relay's
 * subscription ({@link BacklogMeters}) and each inbox listener's counters ({@link InboxMeters}).
 *
 * <pre>{@code
 * curl localhost:8080/actuator/metrics/txbox.outbox.oldest.pending.age
 * }</pre>
 */
@AutoConfiguration(
    after = TxboxAutoConfiguration.class,
    afterName = "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration")
@ConditionalOnClass({MeterRegistry.class, RelayMeters.class})
@ConditionalOnBean({MeterRegistry.class, PostgresOutboxStore.class})
public class TxboxMetricsAutoConfiguration {

  /** The relay's meters; the relay reports to them. */
  @Bean
  public RelayMeters txboxRelayMeters(MeterRegistry registry) {
    return RelayMeters.create(registry);
  }

  /** The backlog gauges of the relay's subscription. */
  @Bean
  public BacklogMeters txboxBacklogMeters(PostgresOutboxStore store, TxboxProperties properties) {
    return BacklogMeters.builder(store)
        .subscriptions(properties.relay().subscription())
        .refresh(properties.metrics().backlogRefresh())
        .limitPerBucket(properties.metrics().backlogLimitPerBucket())
        .build();
  }

  /** The counters of each inbox listener, following its subscriber across restarts. */
  @Bean
  public MeterBinder txboxInboxMeters(ObjectProvider<InboxListeners> listeners) {
    return registry -> listeners.ifAvailable(l -> l.consumers().forEach(consumer ->
        InboxMeters.following(consumer, l, bean -> bean.subscriber(consumer).orElse(null)).bindTo(registry)));
  }
}
