package io.txbox.testkit;

import io.txbox.Message;
import io.txbox.spi.OutboxStore;
import java.util.List;

/** The in-memory store holds to the same contract as the PostgreSQL one. */
class InMemoryOutboxStoreTest extends OutboxStoreContract {

  @Override
  protected OutboxStore freshStore() {
    return new InMemoryOutboxStore(8);
  }

  @Override
  protected void appendCommitted(List<Message> messages) throws Exception {
    store().append(null, messages);
  }
}
