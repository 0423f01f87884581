package io.txbox.mariadb.internal;

import io.txbox.jdbc.spi.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The highest outbox position up to which every position is final: committed, or never to be.
 * InnoDB hands out {@code AUTO_INCREMENT} positions at insert, not at commit, so a relay that read
 * past the newest committed row could skip one that commits late; it reads up to this horizon
 * instead.
 *
 * <p>The proof is a lock. Every writing transaction holds a shared lock on a row of the
 * writer-epoch table (the outbox's trigger takes it before the row gets its position) until it
 * ends. To move the horizon, a relay reads the newest committed position {@code M}, then opens a
 * new epoch {@code E}: a writer that holds a position at or below {@code M} took it before that
 * read, so it locked an epoch older than {@code E}. Once the relay can lock every epoch older than
 * {@code E} without waiting ({@code SKIP LOCKED} leaves out any a writer holds), none of those
 * writers is still open, and every position up to {@code M} is final. The relay then deletes those epochs, and moves the horizon
 * to {@code M}.
 *
 * <p>Positions committed one after another need no proof: a committed row's position is taken,
 * so an unbroken run of them after the horizon is final at once. The epochs prove what a gap
 * (a writer still open, or one that rolled back) would otherwise leave in doubt.
 *
 * <p>A transaction that never wrote to the outbox locks no epoch and holds nothing back; one
 * that wrote and stays open holds the horizon back until it ends, as it must (its events come
 * first in their bucket). A writer that rolled back leaves a gap in the positions, which costs
 * nothing here.
 */
public final class CommitHorizon {
  /** Most positions one look at the run after the horizon reads. */
  private static final int RUN_LIMIT = 5_000;

  private final MariaDbSql sql;
  private final Transactions tx;
  private long horizon;
  private Epoch pending;

  private record Epoch(long epoch, long ceiling) {}

  private record Committed(long endOfRun, long newest) {}

  public CommitHorizon(MariaDbSql sql, Transactions tx) {
    this.sql = sql;
    this.tx = tx;
  }

  /**
   * Moves the horizon as far as the database can prove now, and returns it: seals the epoch
   * opened last time if its writers have ended, opens a new one when rows were committed past the
   * horizon, and tries to seal that one at once (its writers are usually done already).
   */
  public synchronized long advance() {
    trySeal();
    Committed committed = tx.inTransaction("reading committed outbox positions", this::committedAfterHorizon);
    horizon = committed.endOfRun();
    if (pending == null && committed.newest() > horizon) {
      pending = new Epoch(tx.inTransaction("opening a writer epoch", this::openEpoch), committed.newest());
      trySeal();
    }
    return horizon;
  }

  private void trySeal() {
    if (pending != null && tx.inTransaction("sealing writer epochs", this::sealOlderThan)) {
      horizon = Math.max(horizon, pending.ceiling());
      pending = null;
    }
  }

  /**
   * What one read of the committed positions after the horizon shows: where their unbroken run
   * ends, and the newest of them. No other row can take a position that a committed row holds
   * (positions are unique), so the run is final however many writers are still open: while
   * writers commit in order, no epoch is needed. The newest is the last position read, unless the
   * read stopped at its limit.
   */
  private Committed committedAfterHorizon(Connection c) throws SQLException {
    long end = horizon;
    long last = horizon;
    int read = 0;
    boolean unbroken = true;
    try (PreparedStatement p = c.prepareStatement(sql.positionsAfter())) {
      p.setLong(1, horizon);
      p.setInt(2, RUN_LIMIT);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          last = rs.getLong(1);
          read++;
          unbroken = unbroken && last == end + 1;
          if (unbroken) {
            end = last;
          }
        }
      }
    }
    return new Committed(end, read < RUN_LIMIT ? last : newestPosition(c));
  }

  private long newestPosition(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql.newestPosition()); ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private long openEpoch(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql.openEpoch(), Statement.RETURN_GENERATED_KEYS)) {
      p.executeUpdate();
      try (ResultSet keys = p.getGeneratedKeys()) {
        keys.next();
        return keys.getLong(1);
      }
    }
  }

  /**
   * Whether every epoch older than the pending one could be locked, and was deleted. The older
   * epochs are first read, then locked by key, so that no isolation level adds a gap lock that
   * would wait for writers of the newest epoch.
   */
  private boolean sealOlderThan(Connection c) throws SQLException {
    List<Long> older = new ArrayList<>();
    try (PreparedStatement p = c.prepareStatement(sql.olderEpochs())) {
      p.setLong(1, pending.epoch());
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          older.add(rs.getLong(1));
        }
      }
    }
    if (older.isEmpty()) {
      return true;
    }
    // SKIP LOCKED, not NOWAIT: an epoch a writer holds is left out rather than raising an error
    // that the driver would log on every round while a transaction stays open.
    List<Long> locked = new ArrayList<>();
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql.lockEpochs(older))) {
      while (rs.next()) {
        locked.add(rs.getLong(1));
      }
    }
    if (locked.size() < older.size()) {
      c.rollback();
      return false;
    }
    try (Statement s = c.createStatement()) {
      s.executeUpdate(sql.deleteEpochs(older));
    }
    return true;
  }
}
