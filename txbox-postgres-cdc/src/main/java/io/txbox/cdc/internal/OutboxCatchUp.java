package io.txbox.cdc.internal;

import io.txbox.postgres.OutboxRowText;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The outbox rows a slot's checkpoint does not cover, read in one snapshot taken after the slot
 * (re)started: every row of a transaction the checkpoint did not see as ended, up to the rows the
 * new stream will carry. Bucket by bucket, in {@code (tx_id, position)} order within each, a page
 * at a time, so that a long catch-up holds no more than a page in memory; each key's events keep
 * the order the table relay gives them. An unreadable row becomes an unreadable event, alone.
 *
 * <p>With exactly-once delivery, the rows of the transactions the former stream delivered past
 * the checkpoint (the broker's note: {@link DeliveredPastMark}) are passed, not sent: whole, or
 * the first rows, in position order, of one delivered in part.
 *
 * <p>The snapshot is the transaction's (REPEATABLE READ), and it is also what the checkpoint
 * written once every row is delivered says: everything it sees as ended is then delivered,
 * before or here, and whatever commits after it reaches the slot, which was there before it.
 */
public final class OutboxCatchUp implements AutoCloseable {
  private static final String COLUMNS = "o.tx_id::text, o.position, o.id, o.key, o.type, o.version, o.destination,"
      + " o.payload, o.content_type, o.headers::text AS headers, o.created_at, o.available_at";

  private final Connection connection;
  private final String outbox;
  private final int buckets;
  private final SlotCheckpoints.Mark from;
  private final SlotCheckpoints.Candidate snapshot;
  private final DeliveredPastMark.Note delivered;
  /** The last position of the rows delivered of the transaction delivered in part; -1 for none. */
  private final long partialThrough;
  private int bucket;
  private long afterTx;
  private long afterPosition;
  private long read;
  private long passed;
  /** Rows the last page read, passed ones included. */
  private int seen;

  /**
   * Opens the snapshot on a connection of {@code dataSource}, held until {@link #close()}.
   *
   * @param outbox the outbox table, schema included
   * @param setting the setting table, schema included, which holds the bucket count
   * @param from the checkpoint: what is delivered already
   * @param delivered what the former stream delivered past the checkpoint, by the broker's note
   * @param resume how far an earlier catch-up from {@code from} got, to take it up in its snapshot;
   *     {@code null} to start one
   */
  public OutboxCatchUp(DataSource dataSource, String outbox, String setting, SlotCheckpoints.Mark from,
      DeliveredPastMark.Note delivered, CatchUpProgress resume) throws SQLException {
    this.connection = dataSource.getConnection();
    try {
      connection.setAutoCommit(false);
      connection.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      SlotCheckpoints.Candidate own = snapshot(connection);
      // Taken up, only the rows the first snapshot saw: those committed since are the new slot's
      this.snapshot = resume == null ? own : resume.snapshot();
      this.buckets = bucketCount(connection, setting);
      this.partialThrough = partialThrough(connection, outbox, delivered);
    } catch (SQLException | RuntimeException e) {
      connection.close();
      throw e;
    }
    this.outbox = outbox;
    this.from = from;
    this.delivered = delivered;
    if (resume == null) {
      startBucket();
    } else {
      bucket = resume.bucket();
      afterTx = resume.tx();
      afterPosition = resume.position();
    }
  }

  /** The position of the last row delivered of the transaction the note says was delivered in part. */
  private static long partialThrough(Connection c, String outbox, DeliveredPastMark.Note delivered)
      throws SQLException {
    if (delivered.partialXid() == 0 || delivered.partialRows() == 0) {
      return -1;
    }
    try (PreparedStatement p = c.prepareStatement("SELECT max(position) FROM (SELECT position FROM " + outbox
        + " WHERE tx_id = ?::xid8 ORDER BY position LIMIT ?) delivered")) {
      p.setString(1, Long.toUnsignedString(delivered.partialXid()));
      p.setLong(2, delivered.partialRows());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        long through = rs.getLong(1);
        return rs.wasNull() ? -1 : through;
      }
    }
  }

  /** Rows passed because the former stream had delivered them. */
  public long passed() {
    return passed;
  }

  /** The snapshot the rows are read in: the checkpoint to write once they are all delivered. */
  public SlotCheckpoints.Candidate snapshot() {
    return snapshot;
  }

  /** Rows read so far. */
  public long read() {
    return read;
  }

  /**
   * The next transactions' rows, about {@code max} events, whole transactions of one bucket;
   * empty once every bucket is read.
   */
  public List<CommittedTransaction> next(int max) throws SQLException {
    while (bucket < buckets) {
      List<CommittedTransaction> page = page(max);
      if (!page.isEmpty()) {
        return page;
      }
      if (seen == 0) { // else every row of the page was passed: read on in this bucket
        bucket++;
        startBucket();
      }
    }
    return List.of();
  }

  /** Where a bucket's keyset starts: just before the oldest transaction the checkpoint saw open. */
  private void startBucket() {
    long oldest = Arrays.stream(from.stillOpen()).min().orElse(from.deliveredBelow());
    afterTx = Math.min(oldest, from.deliveredBelow()) - 1;
    afterPosition = Long.MAX_VALUE;
  }

  private List<CommittedTransaction> page(int max) throws SQLException {
    List<CommittedTransaction> transactions = new ArrayList<>();
    try (PreparedStatement p = connection.prepareStatement("SELECT " + COLUMNS + " FROM " + outbox + " o"
        + " WHERE o.bucket = ? AND (o.tx_id, o.position) > (?::xid8, ?)"
        + " AND (o.tx_id >= ?::xid8 OR o.tx_id = ANY (?::xid8[]))"
        + " AND o.tx_id < ?::xid8 AND NOT o.tx_id = ANY (?::xid8[])" // what the snapshot saw
        + " ORDER BY o.tx_id, o.position LIMIT ?")) {
      p.setInt(1, bucket);
      p.setString(2, Long.toUnsignedString(Math.max(0, afterTx)));
      p.setLong(3, afterPosition);
      p.setString(4, Long.toUnsignedString(from.deliveredBelow()));
      p.setArray(5, connection.createArrayOf("text",
          Arrays.stream(from.stillOpen()).mapToObj(Long::toUnsignedString).toArray(String[]::new)));
      p.setString(6, Long.toUnsignedString(snapshot.deliveredBelow()));
      p.setArray(7, connection.createArrayOf("text",
          Arrays.stream(snapshot.stillOpen()).mapToObj(Long::toUnsignedString).toArray(String[]::new)));
      p.setInt(8, max);
      List<StreamEvent> events = new ArrayList<>();
      long txId = -1;
      seen = 0;
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          seen++;
          long rowTx = Long.parseUnsignedLong(rs.getString(1));
          afterPosition = rs.getLong(2);
          afterTx = rowTx;
          if (deliveredBefore(rowTx, afterPosition)) {
            passed++;
            continue;
          }
          if (rowTx != txId && !events.isEmpty()) {
            transactions.add(new CommittedTransaction(txId, 0, null, events, bucket));
            events = new ArrayList<>();
          }
          txId = rowTx;
          events.add(event(rs, afterPosition));
          read++;
        }
      }
      if (!events.isEmpty()) {
        transactions.add(new CommittedTransaction(txId, 0, null, events, bucket));
      }
    }
    return transactions;
  }

  /** Whether the former stream delivered the row at {@code position} of transaction {@code tx}. */
  private boolean deliveredBefore(long tx, long position) {
    return delivered.deliveredWhole(tx) || (tx == delivered.partialXid() && position <= partialThrough);
  }

  /** A row as an event, its position as the event's place; unreadable rows go to the dead letters. */
  private static StreamEvent event(ResultSet rs, long position) throws SQLException {
    Row row = new Row(rs);
    try {
      return StreamEvent.of(position, OutboxRowText.message(row)).asRow();
    } catch (IllegalArgumentException e) {
      return StreamEvent.unreadable(position, ("outbox row at position " + position).getBytes(StandardCharsets.UTF_8),
          "text/plain; charset=utf-8", "outbox row at position " + position + ": " + e.getMessage()).asRow();
    }
  }

  /** An outbox row read over JDBC, as the message's rules read any row. */
  private record Row(ResultSet rs) implements OutboxRowText.Columns {
    @Override
    public String text(String name) {
      return get(() -> rs.getString(name));
    }

    @Override
    public UUID uuid(String name) {
      return get(() -> rs.getObject(name, UUID.class));
    }

    @Override
    public Integer integer(String name) {
      return get(() -> (Integer) rs.getObject(name));
    }

    @Override
    public byte[] bytes(String name) {
      return get(() -> rs.getBytes(name));
    }

    @Override
    public Instant instant(String name) {
      return get(() -> {
        OffsetDateTime t = rs.getObject(name, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
      });
    }

    private interface Column<T> {
      T read() throws SQLException;
    }

    private static <T> T get(Column<T> column) {
      try {
        return column.read();
      } catch (SQLException e) {
        throw new IllegalArgumentException(e.getMessage(), e);
      }
    }
  }

  private static SlotCheckpoints.Candidate snapshot(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(SlotCheckpoints.CANDIDATE); ResultSet rs = p.executeQuery()) {
      rs.next();
      return SlotCheckpoints.candidate(rs);
    }
  }

  private static int bucketCount(Connection c, String setting) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT value::int FROM " + setting + " WHERE name = 'bucket_count'");
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** Ends the snapshot and gives the connection back. */
  @Override
  public void close() {
    try (connection) {
      connection.rollback(); // read only: nothing to keep
    } catch (SQLException e) {
      // the connection goes back to the pool, or away, either way
    }
  }
}
