package io.txbox.postgres;

import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The outbox store's contract through PgBouncer in session mode (a server connection per client connection). */
@JdkNeutral
class PgBouncerSessionOutboxStoreContractTest extends PostgresOutboxStoreContractTest {
  @RegisterExtension static final PoolerExtension POOLER = new PoolerExtension(PgBouncer.Mode.SESSION, 30);

  @Override
  TestDatabase database() {
    return POOLER.database();
  }
}
