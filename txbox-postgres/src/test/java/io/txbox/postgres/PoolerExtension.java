package io.txbox.postgres;

import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A PgBouncer in front of the test database for the tests of one class, started before them and
 * stopped after, and test databases reached through it.
 *
 * <pre>{@code
 * @RegisterExtension static final PoolerExtension POOLER = new PoolerExtension(PgBouncer.Mode.TRANSACTION, 8);
 * TestDatabase db = POOLER.database();
 * }</pre>
 */
final class PoolerExtension implements BeforeAllCallback, AfterAllCallback {
  private final PgBouncer.Mode mode;
  private final int poolSize;
  private PgBouncer pooler;

  PoolerExtension(PgBouncer.Mode mode, int poolSize) {
    this.mode = mode;
    this.poolSize = poolSize;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    pooler = TestDatabase.pooler(mode, poolSize);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (pooler != null) {
      pooler.close();
    }
  }

  /** A fresh test database whose pool connects through the pooler, with {@code prepareThreshold=0}. */
  TestDatabase database() {
    return TestDatabase.create(TestDatabase.throughPooler(pooler));
  }
}
