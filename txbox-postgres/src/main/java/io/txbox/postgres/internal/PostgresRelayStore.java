package io.txbox.postgres.internal;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.jdbc.spi.Transactions;
import io.txbox.postgres.PostgresTables;
import io.txbox.spi.Backlog;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Membership;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.DeadLetterSink;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGStatement;

/**
 * The relay's part of the PostgreSQL outbox: appends with their wake-up, subscriptions, bucket
 * leases, reads, checkpoints and dead letters. {@link io.txbox.postgres.PostgresOutboxStore} hands
 * it out as its writer and its relay part, and as the logical relay's dead-letter sink.
 */
public final class PostgresRelayStore implements OutboxStore, DeadLetterSink {
  private final DataSource dataSource;
  private final PostgresTables tables;
  private final PostgresSql sql;
  private final Transactions tx;
  /** For the transactions that lock rows: leases and checkpoints. */
  private final Transactions locking;
  private final boolean notifyOnAppend;
  private final long notifyIntervalNanos;
  private final AtomicLong lastNotify = new AtomicLong(System.nanoTime() - Long.MAX_VALUE / 2);
  private final DataSource listenTo;

  /**
   * @param idleTransactionTimeout how long a transaction of this store that locks rows may sit
   *     idle before the server ends it; null to leave the server's setting
   * @param listenTo where a relay holds its connection in {@code LISTEN}; null for no listening
   */
  public PostgresRelayStore(DataSource dataSource, PostgresTables tables, boolean notifyOnAppend,
      Duration notifyInterval, DataSource listenTo, Duration idleTransactionTimeout) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.sql = PostgresSql.of(tables);
    this.tx = new Transactions(dataSource);
    // SET LOCAL, not a session setting: it ends with its transaction, so a pooler that lends
    // server connections per transaction neither loses it nor hands it to another client.
    this.locking = idleTransactionTimeout == null ? tx : new Transactions(dataSource,
        "SET LOCAL idle_in_transaction_session_timeout = " + Math.max(1, idleTransactionTimeout.toMillis()));
    this.notifyOnAppend = notifyOnAppend;
    this.notifyIntervalNanos = notifyInterval.toNanos();
    this.listenTo = listenTo;
  }

  @Override
  public void append(Connection transaction, List<Message> messages) throws SQLException {
    try (PreparedStatement insert = transaction.prepareStatement(sql.append())) {
      for (Message m : messages) {
        PostgresRows.bindAppend(insert, transaction, m);
        if (messages.size() > 1) {
          insert.addBatch();
        }
      }
      if (messages.size() > 1) {
        insert.executeBatch();
      } else {
        insert.executeUpdate();
      }
    } catch (SQLException e) {
      throw tables.explainMissing(e);
    }
    if (notifyOnAppend && notifyDue()) {
      try (PreparedStatement notify = transaction.prepareStatement(sql.wakeRelays())) {
        notify.setString(1, tables.channel());
        notify.execute();
      }
    }
  }

  /**
   * Whether this append should send a NOTIFY. Every notifying transaction takes PostgreSQL's
   * global notification lock through its commit, so notifying commits run one at a time; sending
   * at most one per interval keeps that cost off busy writers, while an idle relay is still woken
   * by the first commit and a busy one re-polls within milliseconds anyway.
   */
  private boolean notifyDue() {
    long now = System.nanoTime();
    long last = lastNotify.get();
    return now - last >= notifyIntervalNanos && lastNotify.compareAndSet(last, now);
  }

  @Override
  public int openSubscription(String subscription) {
    return tx.inTransaction("opening subscription " + subscription, c -> {
      int count = PostgresSettings.bucketCount(c, tables);
      try (PreparedStatement p = c.prepareStatement(sql.createBuckets())) {
        p.setString(1, subscription);
        p.setInt(2, count);
        p.executeUpdate();
      }
      return count;
    });
  }

  @Override
  public Optional<String> outboxId() {
    return tx.inTransaction("reading the outbox id", c -> PostgresSettings.outboxId(c, tables));
  }

  @Override
  public Membership heartbeat(String subscription, String instance, Duration lease) {
    return locking.inTransaction("heartbeat of " + instance, c -> {
      try (PreparedStatement touch = c.prepareStatement(sql.touchInstance());
          PreparedStatement forget = c.prepareStatement(sql.forgetDeadInstances())) {
        touch.setString(1, subscription);
        touch.setString(2, instance);
        touch.setLong(3, lease.toMillis());
        touch.executeUpdate();
        forget.setString(1, subscription);
        forget.executeUpdate();
      }
      List<String> live = new ArrayList<>();
      try (PreparedStatement p = c.prepareStatement(sql.liveInstances())) {
        p.setString(1, subscription);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            live.add(rs.getString(1));
          }
        }
      }
      Set<Integer> owned = new HashSet<>();
      try (PreparedStatement p = c.prepareStatement(sql.renewLeases())) {
        p.setLong(1, lease.toMillis());
        p.setString(2, subscription);
        p.setString(3, instance);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            owned.add(rs.getInt(1));
          }
        }
      }
      return new Membership(live, owned);
    });
  }

  @Override
  public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    return locking.inTransaction("claiming buckets for " + instance, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.claimBuckets())) {
        p.setString(1, instance);
        p.setLong(2, lease.toMillis());
        p.setString(3, subscription);
        p.setInt(4, max);
        p.setString(5, subscription);
        List<BucketState> claimed = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            BucketState s = PostgresRows.bucketState(rs);
            claimed.add(new BucketState(s.bucket(), s.checkpoint(), s.attempts(), s.nextAttemptAt(),
                rs.getString("previous_owner")));
          }
        }
        return claimed;
      }
    });
  }

  @Override
  public void releaseBuckets(String subscription, String instance, Collection<Integer> released) {
    locking.inTransaction("releasing buckets of " + instance, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.releaseBuckets())) {
        p.setString(1, subscription);
        p.setString(2, instance);
        p.setArray(3, c.createArrayOf("int4", released.toArray(Integer[]::new)));
        return p.executeUpdate();
      }
    });
  }

  @Override
  public void leave(String subscription, String instance) {
    locking.inTransaction("leaving subscription " + subscription, c -> {
      try (PreparedStatement release = c.prepareStatement(sql.releaseAll());
          PreparedStatement remove = c.prepareStatement(sql.removeInstance())) {
        release.setString(1, subscription);
        release.setString(2, instance);
        release.executeUpdate();
        remove.setString(1, subscription);
        remove.setString(2, instance);
        return remove.executeUpdate();
      }
    });
  }

  @Override
  public void recordFence(String subscription, String instance) {
    tx.inTransaction("recording a fence of " + instance, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.recordFence())) {
        p.setString(1, subscription);
        p.setString(2, instance);
        return p.executeUpdate();
      }
    });
  }

  @Override
  public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    return tx.inTransaction("reading the outbox", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.read())) {
        // Server-prepared from the first execution, so payloads and times arrive in binary
        // rather than as hex and text that the driver must parse; but never on a connection whose
        // URL says prepareThreshold=0, as one does behind a pooler that lends server connections
        // per transaction, where a named statement prepared in one transaction is gone (or
        // another client's) in the next.
        if (c.unwrap(PGConnection.class).getPrepareThreshold() != 0) {
          p.unwrap(PGStatement.class).setPrepareThreshold(-1);
        }
        PostgresRows.bindReads(p, c, reads);
        List<StoredMessage> rows = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            rows.add(PostgresRows.storedMessage(rs));
          }
        }
        return rows;
      }
    });
  }

  @Override
  public Set<Integer> saveProgress(
      String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> deadLetters) {
    if (progress.isEmpty()) {
      return Set.of();
    }
    return locking.inTransaction("saving checkpoints", c -> {
      Set<Integer> saved = new HashSet<>();
      try (PreparedStatement p = c.prepareStatement(sql.saveProgress())) {
        PostgresRows.bindProgress(p, c, progress);
        p.setString(7, subscription);
        p.setString(8, instance);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            saved.add(rs.getInt(1));
          }
        }
      }
      insertDeadLetters(c, deadLetters.stream().filter(d -> saved.contains(d.bucket())).toList());
      return BucketProgress.unsaved(progress, saved);
    });
  }

  private void insertDeadLetters(Connection c, List<DeadLetter> letters) throws SQLException {
    if (letters.isEmpty()) {
      return;
    }
    try (PreparedStatement p = c.prepareStatement(sql.deadLetter())) {
      for (DeadLetter d : letters) {
        p.setString(1, d.subscription());
        p.setString(2, d.error());
        p.setInt(3, d.attempts());
        p.setInt(4, d.bucket());
        p.setString(5, Long.toUnsignedString(d.position().txId()));
        p.setLong(6, d.position().position());
        p.addBatch();
      }
      p.executeBatch();
    }
  }

  /**
   * Writes dead letters that carry their whole event, for relays that read events from elsewhere
   * than the outbox table (logical decoding); a letter already saved for the same subscription
   * and position is kept as it is.
   */
  @Override
  public void saveDeadLetterCopies(List<DeadLetter> letters) {
    if (letters.isEmpty()) {
      return;
    }
    locking.inTransaction("saving dead letters", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.deadLetterCopy())) {
        for (DeadLetter d : letters) {
          PostgresRows.bindDeadLetterCopy(p, c, d);
          p.addBatch();
        }
        return p.executeBatch().length;
      }
    });
  }

  @Override
  public AutoCloseable listen(Runnable onAppend) {
    if (listenTo == null) {
      return () -> {};
    }
    return new PostgresListener(listenTo, tables.channel(), onAppend);
  }

  @Override
  public Optional<OpenTransaction> oldestOpenTransaction() {
    return tx.inTransaction("looking up the oldest open transaction", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.oldestOpenTransaction());
          ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(new OpenTransaction(rs.getInt(1), Duration.ofMillis(rs.getLong(2)), rs.getString(3),
            rs.getString(4), rs.getString(5), rs.getString(6), rs.getString(7)));
      }
    });
  }

  /**
   * {@inheritDoc}
   *
   * <p>Counts committed events past each bucket's checkpoint, delayed ones included; before any
   * relay opened the subscription, every event in the log is pending for it, since its relay will
   * start at the beginning of the log.
   */
  @Override
  public Optional<Backlog> backlog(String subscription, int limitPerBucket) {
    if (limitPerBucket < 1) {
      throw new IllegalArgumentException("limitPerBucket must be at least 1, was " + limitPerBucket);
    }
    return tx.inTransaction("counting the backlog of subscription " + subscription, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.backlog())) {
        p.setInt(1, limitPerBucket);
        p.setString(2, subscription);
        p.setString(3, subscription);
        p.setInt(4, limitPerBucket);
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          Timestamp oldest = rs.getTimestamp(2);
          return Optional.of(new Backlog(
              rs.getLong(1), rs.getBoolean(3), Optional.ofNullable(oldest).map(Timestamp::toInstant)));
        }
      }
    });
  }
}
