package io.txbox.spring;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.config.MeterFilter;
import io.txbox.Janitor;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.OperatorStore;
import io.txbox.micrometer.BacklogMeters;
import io.txbox.micrometer.InboxMeters;
import io.txbox.micrometer.JanitorMeters;
import io.txbox.micrometer.OutboxTag;
import io.txbox.micrometer.RelayMeters;
import io.txbox.micrometer.SlotMeters;
import io.txbox.spi.OutboxStore;
import io.txbox.spring.internal.RelaySource;
import io.txbox.spring.internal.TroubledLoops;
import java.util.Optional;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;

/**
 * Micrometer meters for txbox, when txbox-micrometer and a {@code MeterRegistry} are present: the
 * relay's counters and lag timer ({@link RelayMeters}), the backlog gauges of the relay's
 * subscription ({@link BacklogMeters}), each inbox listener's counters ({@link InboxMeters}) and,
 * with logical decoding, the slot's gauges ({@link SlotMeters}).
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
@ConditionalOnBean({MeterRegistry.class, JdbcOutboxStore.class})
public class TxboxMetricsAutoConfiguration {

  /**
   * Tags the outbox's meters with {@code outbox} (database, schema and table), as the standalone
   * relay does, so that alert rules tell two services' outboxes apart. The database's name is read
   * when the first of those meters registers; if it cannot be read then, the tag names the schema
   * and table alone, and a warning says so.
   */
  @Bean
  public MeterFilter txboxOutboxTag(JdbcOutboxStore outbox) {
    OperatorStore store = outbox.operator();
    return OutboxTag.filter(() -> {
      try {
        return store.outboxName();
      } catch (RuntimeException e) {
        LoggerFactory.getLogger(TxboxMetricsAutoConfiguration.class).warn("txbox: cannot read the database's name"
            + " for the meters' outbox tag, using the table's alone ({}): {}", store.outboxTable(), e.toString());
        return store.outboxTable();
      }
    });
  }

  /** The relay's meters; the relay reports to them. */
  @Bean
  public RelayMeters txboxRelayMeters(MeterRegistry registry, TxboxProperties properties) {
    // A logical relay reports under its slot's name; a table relay under its subscription's.
    String subscription = properties.relay().source() == TxboxProperties.Source.LOGICAL
        ? properties.logical().slot() : properties.relay().subscription();
    return RelayMeters.create(registry).register(subscription);
  }

  /**
   * The backlog gauges of the relay's subscription, over the application's outbox store whatever
   * its database; the slot's gauges replace them for a logical relay.
   */
  @Bean
  @Conditional(RelaySource.Table.class)
  public BacklogMeters txboxBacklogMeters(JdbcOutboxStore store, TxboxProperties properties) {
    return backlogMeters(store.relay(), properties);
  }

  private static BacklogMeters backlogMeters(OutboxStore store, TxboxProperties properties) {
    return BacklogMeters.builder(store)
        .subscriptions(properties.relay().subscription())
        .refresh(properties.metrics().backlogRefresh())
        .limitPerBucket(properties.metrics().backlogLimitPerBucket())
        .build();
  }

  /** {@code txbox.loops.troubled}: how many background loops' last step failed (the health detail's count). */
  @Bean
  public MeterBinder txboxLoopMeters(RelayState relay,
      ObjectProvider<TxboxService<Janitor>> janitor, ObjectProvider<InboxListeners> listeners) {
    return registry -> Gauge.builder("txbox.loops.troubled", () -> TroubledLoops.of(
            relay, janitor.getIfAvailable(), listeners.getIfAvailable()).size())
        .description("Background loops (relay, janitor, listeners) whose last step failed; they go on trying")
        .strongReference(true)
        .register(registry);
  }

  /** The janitor's counters ({@link JanitorMeters}), when the janitor runs in this application. */
  @Bean
  @ConditionalOnBean(name = "txboxJanitor")
  public JanitorMeters txboxJanitorMeters(ObjectProvider<TxboxService<Janitor>> janitor) {
    return new JanitorMeters(() -> Optional.ofNullable(janitor.getIfAvailable()).flatMap(TxboxService::current));
  }

  /** The slot's gauges ({@link SlotMeters}), when events go through logical decoding. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.txbox.cdc.LogicalReplication")
  @Conditional(RelaySource.UsesLogicalDecoding.class)
  static class Slot {
    @Bean
    SlotMeters txboxSlotMeters(LogicalReplication replication, ObjectProvider<TxboxService<LogicalRelay>> relay,
        TxboxProperties properties) {
      SlotMeters.Builder meters = SlotMeters.builder(replication)
          .relay(() -> {
            TxboxService<LogicalRelay> bound = relay.getIfAvailable();
            return bound == null ? null : bound.current().orElse(null);
          })
          .refresh(properties.metrics().slotRefresh());
      try {
        return meters.build();
      } catch (IllegalArgumentException e) { // the builder's name for it is refresh
        throw new IllegalArgumentException("txbox setting refused, change txbox.metrics.slot-refresh: "
            + e.getMessage(), e);
      }
    }
  }

  /** The counters of each inbox listener, following its subscriber across restarts. */
  @Bean
  public MeterBinder txboxInboxMeters(ObjectProvider<InboxListeners> listeners) {
    return registry -> listeners.ifAvailable(l -> l.consumers().forEach(consumer ->
        InboxMeters.following(consumer, l, bean -> bean.subscriber(consumer).orElse(null)).bindTo(registry)));
  }
}
