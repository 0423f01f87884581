package io.txbox.postgres;

import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The inbox's contract, and what only PostgreSQL's inbox shows, through PgBouncer in transaction
 * mode (a server connection lent per transaction) with {@code prepareThreshold=0}.
 */
@JdkNeutral
class PgBouncerInboxTest extends PostgresInboxTest {
  @RegisterExtension static final PoolerExtension POOLER = new PoolerExtension(PgBouncer.Mode.TRANSACTION, 8);

  @Override
  TestDatabase database() {
    return POOLER.database();
  }
}
