package io.txbox.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A PostgreSQL server of the test's own, from a directory of PostgreSQL binaries (Debian's
 * {@code /usr/lib/postgresql/15/bin}, or the embedded ones the build downloads), on a free port, run
 * as {@code postgres} when the test runs as root: a primary, and streaming standbys of it that
 * can be promoted, for tests that fail a database over. A standby is made with
 * {@code pg_basebackup} where the binaries have it, else from a copy of the primary's data
 * directory taken while the primary is stopped cleanly (the primary starts again at once).
 *
 * <pre>{@code
 * try (PostgresNode primary = PostgresNode.primary(PostgresNode.debianBinaries(15), Map.of("wal_level", "logical"));
 *     PostgresNode standby = primary.standby("standby1", true, Map.of())) {
 *   primary.stopImmediately();
 *   standby.promote();
 * }
 * }</pre>
 */
public final class PostgresNode implements AutoCloseable {
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

  private final Path binaries;
  private final Path directory;
  private final Path data;
  private final int port;

  private PostgresNode(Path binaries, Path directory, int port) {
    this.binaries = binaries;
    this.directory = directory;
    this.data = directory.resolve("data");
    this.port = port;
  }

  /** Debian's binaries of PostgreSQL {@code major}, from its {@code postgresql-<major>} package. */
  public static Path debianBinaries(int major) {
    return Path.of("/usr/lib/postgresql", Integer.toString(major), "bin");
  }

  /**
   * A new primary: {@code initdb} (trust authentication on loopback, replication allowed), then
   * started with the settings streaming replication needs and {@code settings} over them.
   */
  public static PostgresNode primary(Path binaries, Map<String, String> settings) {
    try {
      PostgresNode node = new PostgresNode(binaries, Files.createTempDirectory("txbox-pg-"), LocalPorts.free());
      ServiceUser.handOver(node.directory);
      node.run(binaries.resolve("initdb").toString(), "-D", node.data.toString(), "-U", "postgres", "-A", "trust",
          "--no-sync", "-E", "UTF8", "--locale=C");
      Map<String, String> all = new LinkedHashMap<>();
      all.put("listen_addresses", "'127.0.0.1'");
      all.put("port", Integer.toString(node.port));
      all.put("unix_socket_directories", "''");
      all.put("wal_level", "replica");
      all.put("max_wal_senders", "10");
      all.put("max_replication_slots", "10");
      all.put("hot_standby", "on");
      all.put("fsync", "off"); // a test's server: speed over surviving a power cut
      all.put("max_connections", "100");
      all.putAll(quoted(settings));
      node.appendSettings(all);
      Files.writeString(node.data.resolve("pg_hba.conf"), "host all all 127.0.0.1/32 trust\n"
          + "host replication all 127.0.0.1/32 trust\n");
      node.start();
      return node;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a PostgreSQL primary from " + binaries, e);
    }
  }

  /**
   * A streaming standby of this primary, named {@code name} ({@code application_name}, for
   * {@code synchronous_standby_names}), started and caught up. With {@code slot}, it streams
   * through a physical slot of its name on the primary ({@code primary_slot_name}), which
   * PostgreSQL 17's failover slots need.
   */
  public PostgresNode standby(String name, boolean slot, Map<String, String> settings) {
    try {
      PostgresNode standby = new PostgresNode(binaries, Files.createTempDirectory("txbox-pg-"), LocalPorts.free());
      ServiceUser.handOver(standby.directory);
      if (slot) {
        execute("SELECT pg_create_physical_replication_slot('" + name + "')");
      }
      if (Files.isExecutable(binaries.resolve("pg_basebackup"))) {
        standby.run(binaries.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p", Integer.toString(port),
            "-U", "postgres", "-D", standby.data.toString(), "-X", "stream", "--no-sync");
      } else {
        copyWhileStopped(standby.data);
      }
      Files.writeString(standby.data.resolve("standby.signal"), "");
      Map<String, String> all = new LinkedHashMap<>();
      all.put("port", Integer.toString(standby.port));
      all.put("primary_conninfo", "'host=127.0.0.1 port=" + port + " user=postgres dbname=postgres application_name="
          + name + "'");
      if (slot) {
        all.put("primary_slot_name", "'" + name + "'");
      }
      all.putAll(quoted(settings));
      standby.appendSettings(all);
      ServiceUser.handOver(standby.directory);
      standby.start();
      return standby;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a standby of " + jdbcUrl("postgres"), e);
    }
  }

  /** Without pg_basebackup: this primary stopped cleanly, its data directory copied, less what belongs to it alone. */
  private void copyWhileStopped(Path target) throws IOException {
    stop();
    run("cp", "-a", data.toString(), target.toString());
    run("rm", "-f", target.resolve("postmaster.pid").toString());
    try (Stream<Path> slots = Files.list(target.resolve("pg_replslot"))) {
      for (Path s : slots.toList()) {
        run("rm", "-rf", s.toString()); // a standby keeps no copy of the primary's slots
      }
    }
    start();
  }

  /** Adds or changes settings and reloads them; those that need a restart take effect at the next. */
  public void set(Map<String, String> settings) {
    try {
      appendSettings(quoted(settings));
      execute("SELECT pg_reload_conf()");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Starts it and waits until it takes connections (a standby: read-only ones). */
  public void start() {
    try {
      run(pgCtl(), "-D", data.toString(), "-l", directory.resolve("server.log").toString(), "-w", "-t", "60",
          "start");
      awaitConnections();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start PostgreSQL at " + data + ": " + log(), e);
    }
  }

  /** Stops it cleanly: sessions end, a checkpoint is written. */
  public void stop() {
    pgCtl("stop", "-m", "fast");
  }

  /** Stops it as a crash would: no checkpoint; what was not sent to a standby is gone from it. */
  public void stopImmediately() {
    pgCtl("stop", "-m", "immediate");
  }

  /** Makes a standby the primary, and waits until it takes writes. */
  public void promote() {
    pgCtl("promote");
  }

  private void pgCtl(String... args) {
    List<String> command = new ArrayList<>(List.of(pgCtl(), "-D", data.toString(), "-w", "-t", "60"));
    command.addAll(List.of(args));
    try {
      run(command.toArray(String[]::new));
    } catch (IOException e) {
      throw new UncheckedIOException("pg_ctl " + String.join(" ", args) + " failed: " + log(), e);
    }
  }

  private String pgCtl() {
    return binaries.resolve("pg_ctl").toString();
  }

  /** Whether it runs now. */
  public boolean isRunning() {
    return Files.exists(data.resolve("postmaster.pid"));
  }

  /** The port it listens on, 127.0.0.1 only. */
  public int port() {
    return port;
  }

  /** A JDBC URL of {@code database}, as {@code postgres}. */
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?user=postgres";
  }

  /** A JDBC URL of {@code database} naming both nodes, that connects to whichever is the primary. */
  public static String jdbcUrl(String database, PostgresNode... nodes) {
    StringBuilder hosts = new StringBuilder();
    for (PostgresNode n : nodes) {
      hosts.append(hosts.length() == 0 ? "" : ",").append("127.0.0.1:").append(n.port);
    }
    return "jdbc:postgresql://" + hosts + "/" + database + "?user=postgres&targetServerType=primary";
  }

  /** Runs {@code sql} in database {@code postgres}. */
  public void execute(String sql) {
    try (Connection c = DriverManager.getConnection(jdbcUrl("postgres")); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  /** What the server logged. */
  public String log() {
    try {
      Path log = directory.resolve("server.log");
      return Files.exists(log) ? Files.readString(log) : "";
    } catch (IOException e) {
      return "(cannot read the log: " + e.getMessage() + ")";
    }
  }

  /** Stops it at once and deletes its files. */
  @Override
  public void close() {
    if (isRunning()) {
      try {
        stopImmediately();
      } catch (RuntimeException e) {
        // deleted anyway
      }
    }
    ServerProcess.deleteDirectory(directory);
  }

  private void awaitConnections() throws IOException {
    Instant deadline = Instant.now().plus(READY_TIMEOUT);
    SQLException last = null;
    while (Instant.now().isBefore(deadline)) {
      try (Connection c = DriverManager.getConnection(jdbcUrl("postgres"))) {
        return;
      } catch (SQLException e) {
        last = e;
        pause();
      }
    }
    throw new IOException("PostgreSQL at port " + port + " takes no connections: " + last);
  }

  private void appendSettings(Map<String, String> settings) throws IOException {
    StringBuilder lines = new StringBuilder("\n");
    settings.forEach((k, v) -> lines.append(k).append(" = ").append(v).append('\n'));
    Path conf = data.resolve("postgresql.conf");
    run("sh", "-c", "cat >> '" + conf + "' <<'EOF'\n" + lines + "EOF");
  }

  /** Values that are not numbers, booleans or quoted already, in quotes. */
  private static Map<String, String> quoted(Map<String, String> settings) {
    Map<String, String> out = new LinkedHashMap<>();
    settings.forEach((k, v) -> out.put(k, v.matches("-?[0-9.]+[a-zA-Z]*|on|off|true|false|'.*'") ? v : "'" + v + "'"));
    return out;
  }

  private void run(String... command) throws IOException {
    List<String> all = new ArrayList<>(ServiceUser.prefix());
    all.addAll(List.of(command));
    Process p = new ProcessBuilder(all).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes());
    try {
      if (p.waitFor() != 0) {
        throw new IOException(String.join(" ", command) + " failed: " + output);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted: " + String.join(" ", command), e);
    }
  }

  private static void pause() {
    try {
      Thread.sleep(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
