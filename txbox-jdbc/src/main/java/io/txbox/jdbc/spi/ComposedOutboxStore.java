package io.txbox.jdbc.spi;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.StoreStatus;
import io.txbox.spi.Backlog;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.JanitorStore;
import io.txbox.spi.Membership;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * A table outbox made of its three parts, each a database's own or shared: the writers' and
 * relays' ({@link OutboxStore}), the janitor's ({@link JanitorStore}) and the operators'
 * ({@link OperatorStore}, usually a {@link JdbcOperatorStore}). A database's public store
 * extends it with its builder and what only it has.
 *
 * <pre>{@code
 * public final class MyDbOutboxStore extends ComposedOutboxStore {
 *   private MyDbOutboxStore(MyDbRelayStore relay, MyDbJanitorStore janitor, JdbcOperatorStore operator) {
 *     super(relay, janitor, operator);
 *   }
 * }
 * }</pre>
 */
public abstract class ComposedOutboxStore implements JdbcOutboxStore {
  private final OutboxStore relay;
  private final JanitorStore janitor;
  private final OperatorStore operator;

  protected ComposedOutboxStore(OutboxStore relay, JanitorStore janitor, OperatorStore operator) {
    this.relay = relay;
    this.janitor = janitor;
    this.operator = operator;
  }

  // The writers' and the relays' part.

  @Override
  public void append(Connection transaction, List<Message> messages) throws SQLException {
    relay.append(transaction, messages);
  }

  @Override
  public int openSubscription(String subscription) {
    return relay.openSubscription(subscription);
  }

  @Override
  public Membership heartbeat(String subscription, String instance, Duration lease) {
    return relay.heartbeat(subscription, instance, lease);
  }

  @Override
  public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    return relay.claimBuckets(subscription, instance, max, lease);
  }

  @Override
  public void releaseBuckets(String subscription, String instance, Collection<Integer> released) {
    relay.releaseBuckets(subscription, instance, released);
  }

  @Override
  public void leave(String subscription, String instance) {
    relay.leave(subscription, instance);
  }

  @Override
  public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    return relay.read(subscription, reads);
  }

  @Override
  public Set<Integer> saveProgress(
      String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> deadLetters) {
    return relay.saveProgress(subscription, instance, progress, deadLetters);
  }

  @Override
  public AutoCloseable listen(Runnable onAppend) {
    return relay.listen(onAppend);
  }

  @Override
  public Optional<Backlog> backlog(String subscription, int limitPerBucket) {
    return relay.backlog(subscription, limitPerBucket);
  }

  @Override
  public Optional<OpenTransaction> oldestOpenTransaction() {
    return relay.oldestOpenTransaction();
  }

  @Override
  public Optional<String> outboxId() {
    return relay.outboxId();
  }

  @Override
  public void recordFence(String subscription, String instance) {
    relay.recordFence(subscription, instance);
  }

  // The janitor's part.

  @Override
  public OptionalInt deleteRelayed(Duration retention, int limit) {
    return janitor.deleteRelayed(retention, limit);
  }

  @Override
  public OptionalInt deleteInboxRecords(Duration retention, int limit) {
    return janitor.deleteInboxRecords(retention, limit);
  }

  // The operators' part.

  @Override
  public String outboxName() {
    return operator.outboxName();
  }

  @Override
  public String outboxTable() {
    return operator.outboxTable();
  }

  @Override
  public int migrate() {
    return operator.migrate();
  }

  @Override
  public List<MigrationScript> migrationScripts() {
    return operator.migrationScripts();
  }

  @Override
  public StoreStatus status(int limitPerBucket) {
    return operator.status(limitPerBucket);
  }

  @Override
  public List<StoreStatus.Minute> writtenPerMinute(int minutes) {
    return operator.writtenPerMinute(minutes);
  }

  @Override
  public DeadLetters deadLetters() {
    return operator.deadLetters();
  }

  @Override
  public Replay replay() {
    return operator.replay();
  }
}
