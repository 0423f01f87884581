package io.txbox.spring.internal;

import io.txbox.spring.TxboxProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Conditions on {@code txbox.relay.source} and {@code txbox.outbox.write-mode}, bound the way the
 * properties are, so {@code logical}, {@code LOGICAL} and {@code wal-message} all match.
 */
public final class RelaySource {
  private RelaySource() {}

  /** The relay polls the outbox table (the default). */
  public static final class Table implements Condition {
    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
      return source(context) == TxboxProperties.Source.TABLE;
    }
  }

  /** The relay streams a logical replication slot. */
  public static final class Logical implements Condition {
    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
      return source(context) == TxboxProperties.Source.LOGICAL;
    }
  }

  /** {@code Outbox.send} writes WAL messages. */
  public static final class WritesWalMessages implements Condition {
    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
      return writeMode(context) == TxboxProperties.WriteMode.WAL_MESSAGE;
    }
  }

  /** Events are written or relayed through logical decoding. */
  public static final class UsesLogicalDecoding implements Condition {
    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
      return source(context) == TxboxProperties.Source.LOGICAL
          || writeMode(context) == TxboxProperties.WriteMode.WAL_MESSAGE;
    }
  }

  private static TxboxProperties.WriteMode writeMode(ConditionContext context) {
    return Binder.get(context.getEnvironment()).bind("txbox.outbox.write-mode", TxboxProperties.WriteMode.class)
        .orElse(TxboxProperties.WriteMode.TABLE);
  }

  private static TxboxProperties.Source source(ConditionContext context) {
    return Binder.get(context.getEnvironment()).bind("txbox.relay.source", TxboxProperties.Source.class)
        .orElse(TxboxProperties.Source.TABLE);
  }
}
