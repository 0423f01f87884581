package io.txbox.postgres;

import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The outbox store's contract through PgBouncer in transaction mode (a server connection lent per
 * transaction), with the URL pgjdbc advises there ({@code prepareThreshold=0}) and the setting
 * {@code txbox relay} uses (a {@code SET LOCAL} in each transaction that locks rows).
 */
@JdkNeutral
class PgBouncerOutboxStoreContractTest extends PostgresOutboxStoreContractTest {
  @RegisterExtension static final PoolerExtension POOLER = new PoolerExtension(PgBouncer.Mode.TRANSACTION, 8);

  @Override
  TestDatabase database() {
    return POOLER.database();
  }

  @Override
  PostgresOutboxStore.Builder configure(PostgresOutboxStore.Builder builder) {
    return builder.idleTransactionTimeout(Duration.ofSeconds(10));
  }
}
