package io.txbox.cdc.internal;

import io.txbox.cdc.LogicalReplication;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;
import org.postgresql.replication.fluent.logical.ChainedLogicalStreamBuilder;

/**
 * One replication connection streaming one slot with {@code pgoutput}: protocol 1, the
 * publication's inserts and the WAL messages. From PostgreSQL 14 on, inserted values come in
 * binary ({@code binary 'true'}): the walsender sends a {@code bytea} as it is and a timestamp as
 * its microseconds, where text would print them as hex and as a date, to be parsed again here.
 * Values sent as text (PostgreSQL 13) print in the forms {@link io.txbox.postgres.OutboxRowText}
 * reads (UTC, ISO dates, hex bytea) whatever the server's defaults.
 */
public final class ReplicationSession implements AutoCloseable {
  /** SQL state of a slot streamed by another connection. */
  public static final String OBJECT_IN_USE = "55006";
  /** SQL state of a slot that does not exist. */
  public static final String UNDEFINED_OBJECT = "42704";

  private final Connection connection;
  private final PGReplicationStream stream;
  private final int timeline;
  private long confirmed;

  private ReplicationSession(Connection connection, PGReplicationStream stream, int timeline) {
    this.connection = connection;
    this.stream = stream;
    this.timeline = timeline;
  }

  /** The first version whose {@code pgoutput} takes the {@code binary} option. */
  private static final int FIRST_BINARY_VERSION = 14;

  /** Connects and starts streaming from the slot's confirmed position. */
  public static ReplicationSession start(
      String jdbcUrl, Properties properties, String slot, String publication, long statusIntervalMillis)
      throws SQLException {
    Properties p = new Properties();
    p.putAll(properties);
    PGProperty.REPLICATION.set(p, "database");
    PGProperty.ASSUME_MIN_SERVER_VERSION.set(p, "10");
    PGProperty.PREFER_QUERY_MODE.set(p, "simple");
    PGProperty.OPTIONS.set(p, "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex");
    PGProperty.APPLICATION_NAME.set(p, LogicalReplication.RELAY_APPLICATION_NAME);
    Connection c = DriverManager.getConnection(jdbcUrl, p);
    try {
      int timeline = timeline(c);
      ChainedLogicalStreamBuilder builder = c.unwrap(PGConnection.class).getReplicationAPI()
          .replicationStream()
          .logical()
          .withSlotName(slot)
          .withSlotOption("proto_version", "1")
          .withSlotOption("publication_names", publication)
          .withSlotOption("messages", "true")
          .withStatusInterval((int) statusIntervalMillis, TimeUnit.MILLISECONDS);
      if (c.getMetaData().getDatabaseMajorVersion() >= FIRST_BINARY_VERSION) {
        builder.withSlotOption("binary", "true");
      }
      PGReplicationStream stream = builder.start();
      return new ReplicationSession(c, stream, timeline);
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** The timeline of the server this connection streams from, as the walsender names it. */
  private static int timeline(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("IDENTIFY_SYSTEM")) {
      rs.next();
      return rs.getInt("timeline");
    }
  }

  /** The timeline of the server streamed: a checkpoint read on another one does not describe this stream. */
  public int timeline() {
    return timeline;
  }

  /** The next message if one has arrived, else {@code null}; sends a status update when due. */
  public ByteBuffer readPending() throws SQLException {
    return stream.readPending();
  }

  /** Where the last message read, or the last keep-alive, stands in the WAL. */
  public long lastReceived() {
    return stream.getLastReceiveLSN().asLong();
  }

  /** Confirms that everything before {@code lsn} is delivered; sent with the next status update. */
  public void confirm(long lsn) {
    if (lsn > confirmed) {
      confirmed = lsn;
      stream.setFlushedLSN(LogSequenceNumber.valueOf(lsn));
      stream.setAppliedLSN(LogSequenceNumber.valueOf(lsn));
    }
  }

  /** The last position confirmed in this session. */
  public long confirmed() {
    return confirmed;
  }

  /** Sends the status now: the confirmed position, and a sign of life while a publish is slow. */
  public void sendStatus() throws SQLException {
    stream.forceUpdateStatus();
  }

  @Override
  public void close() {
    try {
      if (!stream.isClosed()) {
        stream.forceUpdateStatus();
        stream.close();
      }
    } catch (SQLException | RuntimeException e) {
      // the connection is going anyway; what was not confirmed is sent again
    }
    try {
      connection.close();
    } catch (SQLException e) {
      // nothing left to do with it
    }
  }
}
