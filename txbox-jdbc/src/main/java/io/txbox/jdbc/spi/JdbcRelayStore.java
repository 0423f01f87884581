package io.txbox.jdbc.spi;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.Membership;
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
 * The writer's and relay's part of a table outbox in plain JDBC, for a database without
 * {@code RETURNING} or arrays: appends, subscriptions, bucket leases, reads, checkpoints and dead
 * letters, each a short transaction of a few statements ({@link RelaySql}). Positions are the
 * whole checkpoint (its {@code txId} is always 0). What no plain statement can say is the
 * database's own: how far a relay may read without passing a transaction that can still commit
 * ({@link #committedUpTo}). PostgreSQL's store does each operation in one statement instead and
 * does not use this class.
 *
 * <pre>{@code
 * final class MyRelayStore extends JdbcRelayStore {
 *   MyRelayStore(DataSource dataSource, MyTables tables) {
 *     super(dataSource, tables, MyDialect.INSTANCE, MySql.relay(tables));
 *   }
 *
 *   protected long committedUpTo() { ... } // the proof that nothing below can still commit
 * }
 * }</pre>
 *
 * <p>Every relay instance beats at once on the same rows, and a relay whose first beat fails
 * exits, so leases are taken and renewed at READ COMMITTED, where an UPDATE locks only the rows it
 * changes, and instance rows are touched by their key alone, never by a locking range scan.
 */
public abstract class JdbcRelayStore implements OutboxStore {
  private final TableNames tables;
  private final SqlDialect dialect;
  private final RelaySql sql;
  private final Transactions tx;

  protected JdbcRelayStore(DataSource dataSource, TableNames tables, SqlDialect dialect, RelaySql sql) {
    this.tables = tables;
    this.dialect = dialect;
    this.sql = sql;
    this.tx = new Transactions(dataSource);
  }

  /**
   * The highest position at or below which every event is final, committed or never to be; called
   * before each read, which never goes past it. The heart of "no event lost": a database that
   * hands out positions at insert rather than at commit must prove that no open transaction holds
   * one below.
   */
  protected abstract long committedUpTo();

  @Override
  public void append(Connection transaction, List<Message> messages) throws SQLException {
    try (PreparedStatement insert = transaction.prepareStatement(sql.append())) {
      for (Message m : messages) {
        bindAppend(insert, m);
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

  private void bindAppend(PreparedStatement p, Message m) throws SQLException {
    dialect.setUuid(p, 1, m.id());
    p.setString(2, m.key());
    p.setString(3, m.type());
    p.setInt(4, m.version());
    p.setString(5, m.destination());
    p.setBytes(6, m.payload());
    p.setString(7, m.contentType());
    p.setString(8, JsonHeaders.write(m.headers()));
    dialect.setInstant(p, 9, m.createdAt());
    dialect.setInstant(p, 10, m.availableAt());
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
    try {
      return Integer.parseInt(setting(c, "bucket_count").orElseThrow(() -> new SQLException(
          "txbox's setting table holds no bucket_count: run the store's migrate() or txbox migrate")));
    } catch (SQLException e) {
      throw tables.explainMissing(e);
    }
  }

  /** {@inheritDoc} Empty on tables migrated before the id was made: {@code txbox migrate} makes it. */
  @Override
  public Optional<String> outboxId() {
    return tx.inTransaction("reading the outbox id", c -> setting(c, "outbox_id"));
  }

  private Optional<String> setting(Connection c, String name) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql.setting())) {
      p.setString(1, name);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
      }
    }
  }

  /** {@inheritDoc} Built not to deadlock with the other instances' beats: see the class comment. */
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

  /** Dead instances are found by a plain read, then deleted one by one by their key. */
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
            BucketState s = bucketState(rs);
            claimed.add(new BucketState(s.bucket(), s.checkpoint(), s.attempts(), s.nextAttemptAt(),
                rs.getString("owner")));
          }
        }
      }
      if (!claimed.isEmpty()) {
        String take = sql.takeBuckets(claimed.stream().map(BucketState::bucket).toList());
        try (PreparedStatement p = c.prepareStatement(take)) {
          p.setString(1, instance);
          p.setLong(2, micros(lease));
          p.setString(3, subscription);
          p.executeUpdate();
        }
      }
      return claimed;
    });
  }

  private BucketState bucketState(ResultSet rs) throws SQLException {
    return new BucketState(rs.getInt("bucket"), new Checkpoint(0, rs.getLong("position")), rs.getInt("attempts"),
        dialect.getInstant(rs, rs.findColumn("next_attempt_at")));
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

  @Override
  public void recordFence(String subscription, String instance) {
    tx.inReadCommitted("recording a fence of " + instance, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.recordFence())) {
        p.setString(1, subscription);
        p.setString(2, instance);
        return p.executeUpdate();
      }
    });
  }

  /** {@inheritDoc} Never past {@link #committedUpTo}, asked first. */
  @Override
  public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    if (reads.isEmpty()) {
      return List.of();
    }
    long upTo = committedUpTo();
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
            rows.add(storedMessage(rs));
          }
        }
        return rows;
      }
    });
  }

  /**
   * A row of the read. A row that breaks the message rules (written with plain SQL) comes back
   * unreadable, with the rule it breaks, so that the relay dead-letters it and goes on.
   */
  private StoredMessage storedMessage(ResultSet rs) throws SQLException {
    int bucket = rs.getInt(1);
    Checkpoint checkpoint = new Checkpoint(0, rs.getLong(2));
    try {
      return new StoredMessage(bucket, checkpoint, dialect.message(rs, 3));
    } catch (RuntimeException e) {
      return StoredMessage.unreadable(bucket, checkpoint, "event " + rs.getString(3) + ": " + e.getMessage());
    }
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
          dialect.setInstant(p, 3, bp.nextAttemptAt());
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
