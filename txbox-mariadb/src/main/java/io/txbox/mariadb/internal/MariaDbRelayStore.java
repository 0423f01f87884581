package io.txbox.mariadb.internal;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.jdbc.support.Transactions;
import io.txbox.spi.Backlog;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Membership;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The relay's part of the MariaDB outbox: appends, subscriptions, bucket leases, reads up to the
 * {@link CommitHorizon}, checkpoints and dead letters. {@link io.txbox.mariadb.MariaDbOutboxStore}
 * hands its {@link OutboxStore} calls here.
 */
public final class MariaDbRelayStore implements OutboxStore {
  private final MariaDbTables tables;
  private final MariaDbSql sql;
  private final Transactions tx;
  private final CommitHorizon horizon;
  private final MariaDbStatus status;

  public MariaDbRelayStore(DataSource dataSource, MariaDbTables tables) {
    this.tables = tables;
    this.sql = MariaDbSql.of(tables);
    this.tx = new Transactions(dataSource);
    this.horizon = new CommitHorizon(sql, tx);
    this.status = new MariaDbStatus(dataSource, tables);
  }

  /** {@inheritDoc} Counts at most {@code limitPerBucket} events per bucket, on the clustered key's range. */
  @Override
  public Optional<Backlog> backlog(String subscription, int limitPerBucket) {
    return Optional.of(status.backlog(subscription, limitPerBucket));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On MariaDB: the oldest other transaction in {@code information_schema.INNODB_TRX} that has
   * modified rows, what the relay's stall warning names; its {@code pid} is the connection id that
   * {@code KILL} takes. Seeing other users' transactions takes the {@code PROCESS} privilege;
   * without it, none is found and the warning stays silent.
   */
  @Override
  public Optional<OpenTransaction> oldestOpenTransaction() {
    return status.oldestOpenTransaction();
  }

  @Override
  public void append(Connection transaction, List<Message> messages) throws SQLException {
    try (PreparedStatement insert = transaction.prepareStatement(sql.append())) {
      for (Message m : messages) {
        MariaDbRows.bindAppend(insert, m);
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
  }

  @Override
  public int openSubscription(String subscription) {
    return tx.inTransaction("opening subscription " + subscription, c -> {
      int count = bucketCount(c);
      try (PreparedStatement p = c.prepareStatement(sql.createBucket())) {
        for (int b = 0; b < count; b++) {
          p.setString(1, subscription);
          p.setInt(2, b);
          p.addBatch();
        }
        p.executeBatch();
      }
      return count;
    });
  }

  private int bucketCount(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql.bucketCount()); ResultSet rs = p.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException("txbox's setting table holds no bucket_count: run MariaDbOutboxStore.migrate()");
      }
      return Integer.parseInt(rs.getString(1));
    } catch (SQLException e) {
      throw tables.explainMissing(e);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Every relay instance beats at once on the same rows, and a relay whose first beat fails
   * exits, so the beat is built not to deadlock: it runs at READ COMMITTED, where an UPDATE locks
   * only the rows it changes, and it touches instance rows by their key alone (dead instances are
   * found by a plain read, then deleted one by one), never by a locking range scan.
   */
  @Override
  public Membership heartbeat(String subscription, String instance, Duration lease) {
    return tx.inReadCommitted("heartbeat of " + instance, c -> {
      touch(c, subscription, instance, lease);
      forgetDeadInstances(c, subscription);
      try (PreparedStatement renew = c.prepareStatement(sql.renewLeases())) {
        renew.setLong(1, micros(lease));
        renew.setString(2, subscription);
        renew.setString(3, instance);
        renew.executeUpdate();
      }
      List<String> live = strings(c, sql.liveInstances(), subscription);
      Set<Integer> owned = new HashSet<>();
      for (String bucket : strings(c, sql.ownedBuckets(), subscription, instance)) {
        owned.add(Integer.parseInt(bucket));
      }
      return new Membership(live, owned);
    });
  }

  /** Renews this instance's row; the first beat inserts it. */
  private void touch(Connection c, String subscription, String instance, Duration lease) throws SQLException {
    try (PreparedStatement touch = c.prepareStatement(sql.touchInstance())) {
      touch.setLong(1, micros(lease));
      touch.setString(2, subscription);
      touch.setString(3, instance);
      if (touch.executeUpdate() == 1) {
        return;
      }
    }
    try (PreparedStatement join = c.prepareStatement(sql.joinInstance())) {
      join.setString(1, subscription);
      join.setString(2, instance);
      join.setLong(3, micros(lease));
      join.executeUpdate();
    }
  }

  private void forgetDeadInstances(Connection c, String subscription) throws SQLException {
    List<String> dead = strings(c, sql.deadInstances(), subscription);
    if (dead.isEmpty()) {
      return;
    }
    try (PreparedStatement forget = c.prepareStatement(sql.forgetDeadInstance())) {
      for (String instance : dead) {
        forget.setString(1, subscription);
        forget.setString(2, instance);
        forget.executeUpdate(); // the condition again: the instance may have come back since
      }
    }
  }

  @Override
  public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    return tx.inReadCommitted("claiming buckets for " + instance, c -> {
      List<BucketState> claimed = new ArrayList<>();
      try (PreparedStatement p = c.prepareStatement(sql.claimableBuckets())) {
        p.setString(1, subscription);
        p.setInt(2, max);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            claimed.add(MariaDbRows.bucketState(rs));
          }
        }
      }
      if (!claimed.isEmpty()) {
        try (PreparedStatement p = c.prepareStatement(sql.takeBuckets(claimed.stream().map(BucketState::bucket).toList()))) {
          p.setString(1, instance);
          p.setLong(2, micros(lease));
          p.setString(3, subscription);
          p.executeUpdate();
        }
      }
      return claimed;
    });
  }

  @Override
  public void releaseBuckets(String subscription, String instance, Collection<Integer> released) {
    tx.inReadCommitted("releasing buckets of " + instance, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.releaseBuckets())) {
        for (int bucket : released.stream().sorted().toList()) { // in bucket order, as saveProgress
          p.setString(1, subscription);
          p.setString(2, instance);
          p.setInt(3, bucket);
          p.addBatch();
        }
        return p.executeBatch().length;
      }
    });
  }

  @Override
  public void leave(String subscription, String instance) {
    tx.inReadCommitted("leaving subscription " + subscription, c -> {
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

  /** {@inheritDoc} Never past the {@link CommitHorizon}, which this call moves first. */
  @Override
  public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    if (reads.isEmpty()) {
      return List.of();
    }
    long upTo = horizon.advance();
    return tx.inTransaction("reading the outbox", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.read(reads.size()))) {
        int i = 0;
        for (BucketRead r : reads) {
          p.setInt(++i, r.bucket());
          p.setLong(++i, r.after().position());
          p.setLong(++i, upTo);
          p.setInt(++i, r.limit());
        }
        List<StoredMessage> rows = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            rows.add(MariaDbRows.storedMessage(rs));
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
    return tx.inReadCommitted("saving checkpoints", c -> {
      Set<Integer> saved = new HashSet<>();
      try (PreparedStatement p = c.prepareStatement(sql.saveProgress())) {
        // One statement per bucket: its count of matched rows says whether the lease still held.
        // In bucket order, the order the heartbeat's renewal locks them in, so the two never wait
        // on each other in a cycle.
        for (BucketProgress bp : progress.stream().sorted(Comparator.comparingInt(BucketProgress::bucket)).toList()) {
          p.setLong(1, bp.checkpoint().position());
          p.setInt(2, bp.attempts());
          p.setObject(3, bp.nextAttemptAt() == null ? null : MariaDbRows.utc(bp.nextAttemptAt()));
          p.setString(4, bp.lastError());
          p.setString(5, subscription);
          p.setInt(6, bp.bucket());
          p.setString(7, instance);
          if (p.executeUpdate() == 1) {
            saved.add(bp.bucket());
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
        p.setLong(5, d.position().position());
        p.addBatch();
      }
      p.executeBatch();
    }
  }

  private static List<String> strings(Connection c, String query, String... parameters) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(query)) {
      for (int i = 0; i < parameters.length; i++) {
        p.setString(i + 1, parameters[i]);
      }
      List<String> values = new ArrayList<>();
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          values.add(rs.getString(1));
        }
      }
      return values;
    }
  }

  private static long micros(Duration d) {
    return d.toNanos() / 1_000;
  }
}
