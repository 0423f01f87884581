package io.txbox.spring;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txbox.Janitor;
import io.txbox.Relay;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.micrometer.BacklogMeters;
import io.txbox.micrometer.InboxMeters;
import io.txbox.micrometer.RelayMeters;
import io.txbox.spring.internal.ContextBound;
import io.txbox.spring.internal.InboxListeners;
import io.txbox.spring.internal.TroubledLoops;
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
    // Boot 3's name, then Boot 4's: the registry this binds to must exist first.
    afterName = {
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
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

  /** {@code txbox.loops.troubled}: how many background loops' last step failed (the health detail's count). */
  @Bean
  public MeterBinder txboxLoopMeters(ObjectProvider<ContextBound<Relay>> relay,
      ObjectProvider<ContextBound<Janitor>> janitor, ObjectProvider<InboxListeners> listeners) {
    return registry -> Gauge.builder("txbox.loops.troubled", () -> TroubledLoops.of(
            relay.getIfAvailable(), janitor.getIfAvailable(), listeners.getIfAvailable()).size())
        .description("Background loops (relay, janitor, listeners) whose last step failed; they go on trying")
        .strongReference(true)
        .register(registry);
  }

  /** The counters of each inbox listener, following its subscriber across restarts. */
  @Bean
  public MeterBinder txboxInboxMeters(ObjectProvider<InboxListeners> listeners) {
    return registry -> listeners.ifAvailable(l -> l.consumers().forEach(consumer ->
        InboxMeters.following(consumer, l, bean -> bean.subscriber(consumer).orElse(null)).bindTo(registry)));
  }
}
