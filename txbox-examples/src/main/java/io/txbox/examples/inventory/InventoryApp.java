package io.txbox.examples.inventory;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Inbox;
import io.txbox.examples.ShopSchema;
import io.txbox.kafka.KafkaSubscriber;
import io.txbox.mariadb.MariaDbInboxStore;
import io.txbox.nats.NatsSubscriber;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.rabbitmq.RabbitSubscriber;
import io.txbox.spi.Subscriber;
import io.txbox.sqs.SqsSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inventory service as a process: a subscriber that feeds the orders into the inbox, with
 * {@link InventoryService} as the handler. Stops cleanly on SIGTERM.
 *
 * <pre>
 * java -cp txbox-demo.jar io.txbox.examples.inventory.InventoryApp \
 *   --jdbc-url jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres --schema shop --instance inventory-1.7 \
 *   --broker kafka --bootstrap-servers 127.0.0.1:9092 --topic orders --member inventory-1 --threads 4
 *   (or --broker nats --nats-servers nats://127.0.0.1:4222 --stream ORDERS,
 *    or --broker rabbitmq --rabbitmq-uri amqp://guest:guest@127.0.0.1:5672 --queue orders.inventory,
 *    or --broker sqs --sqs-region eu-west-1 --queue orders.fifo)
 * </pre>
 *
 * <p>With Kafka, {@code --threads} consumers (default 1) handle partitions in parallel, and {@code
 * --member} names the process's place in the group across restarts (static membership). With NATS
 * and RabbitMQ, {@code --threads} handle different keys in parallel. {@code --instance} names this
 * run of the process. Every 200 ms it writes its subscriber's counts to {@code subscriber_stats},
 * so the demo can report how many redeliveries the inbox absorbed. With a {@code jdbc:mariadb:}
 * URL the inbox is {@code MariaDbInboxStore}, in the database the URL names; {@code --schema}
 * then names the database of the shop's tables.
 */
public final class InventoryApp {
  private static final Logger log = LoggerFactory.getLogger(InventoryApp.class);
  /** The inbox consumer name (and Kafka group, NATS durable) of every inventory process. */
  public static final String CONSUMER = "inventory";
  private static final int MAX_THREADS = 64;

  private InventoryApp() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = options(args);
    String schema = ShopSchema.requireName(required(options, "--schema"));
    HikariDataSource ds = new HikariDataSource();
    ds.setJdbcUrl(required(options, "--jdbc-url"));
    int threads = threads(options.getOrDefault("--threads", "1"));
    ds.setMaximumPoolSize(threads + 1);
    ds.setPoolName("inventory");
    boolean mariaDb = ds.getJdbcUrl().startsWith("jdbc:mariadb:");
    // On MariaDB the inbox's tables live in the database the URL names; the shop's in --schema.
    Inbox inbox = Inbox.create(ds, mariaDb ? MariaDbInboxStore.builder().build()
        : PostgresInboxStore.builder().schema(schema).build());
    Subscriber subscriber = subscriber(options, inbox, new InventoryService(schema), threads);
    String instance = required(options, "--instance");
    ScheduledExecutorService stats = Executors.newSingleThreadScheduledExecutor();
    String reportSql = reportSql(schema, mariaDb);
    stats.scheduleWithFixedDelay(() -> report(ds, reportSql, instance, subscriber), 200, 200, TimeUnit.MILLISECONDS);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      subscriber.close();
      stats.shutdownNow();
      report(ds, reportSql, instance, subscriber);
      ds.close();
      stopped.countDown();
    }, "inventory-shutdown"));
    subscriber.start();
    log.info("inventory {} consuming", instance);
    stopped.await();
  }

  private static Subscriber subscriber(Map<String, String> options, Inbox inbox, InventoryService handler, int threads) {
    String broker = options.getOrDefault("--broker", "kafka");
    return switch (broker) {
      case "kafka" -> KafkaSubscriber.builder(inbox, CONSUMER, handler)
          .bootstrapServers(required(options, "--bootstrap-servers"))
          .topics(required(options, "--topic"))
          .concurrency(threads)
          // Static membership: a restarted process takes its partitions back at once, without a
          // rebalance of the whole group; one that stays down loses them after 6 s, not 45.
          .property("group.instance.id", required(options, "--member"))
          .property("session.timeout.ms", "6000")
          .property("heartbeat.interval.ms", "1000")
          .build();
      case "nats" -> NatsSubscriber.builder(inbox, CONSUMER, handler)
          .servers(required(options, "--nats-servers"))
          .stream(required(options, "--stream"))
          .concurrency(threads)
          .build();
      case "rabbitmq" -> RabbitSubscriber.builder(inbox, CONSUMER, handler)
          .uri(required(options, "--rabbitmq-uri"))
          .queue(required(options, "--queue"))
          .concurrency(threads)
          .build();
      case "sqs" -> SqsSubscriber.builder(inbox, CONSUMER, handler)
          .endpoint(options.get("--sqs-endpoint"))
          .region(options.get("--sqs-region"))
          .queue(required(options, "--queue"))
          .concurrency(threads)
          .visibilityTimeout(Duration.ofSeconds(10)) // a killed process's messages come again after 10 s
          .waitTime(Duration.ofSeconds(5))
          .build();
      default -> throw new IllegalArgumentException("InventoryApp --broker must be kafka, nats, rabbitmq or sqs, was '"
          + broker + "'");
    };
  }

  /** The upsert of a subscriber's counts, in the database's own words. */
  private static String reportSql(String schema, boolean mariaDb) {
    String insert = "INSERT INTO " + schema + ".subscriber_stats (instance, processed, duplicates) VALUES (?, ?, ?)";
    return mariaDb
        ? insert + " ON DUPLICATE KEY UPDATE processed = VALUES(processed), duplicates = VALUES(duplicates),"
            + " updated_at = UTC_TIMESTAMP(6)"
        : insert + " ON CONFLICT (instance) DO UPDATE SET processed = excluded.processed,"
            + " duplicates = excluded.duplicates, updated_at = now()";
  }

  private static void report(HikariDataSource ds, String sql, String instance, Subscriber subscriber) {
    try (Connection c = ds.getConnection(); PreparedStatement p = c.prepareStatement(sql)) {
      p.setString(1, instance);
      p.setLong(2, subscriber.processed());
      p.setLong(3, subscriber.duplicates());
      p.executeUpdate();
    } catch (SQLException | RuntimeException e) {
      log.warn("could not write the subscriber's counts: {}", e.toString());
    }
  }

  private static int threads(String value) {
    try {
      int threads = Integer.parseInt(value);
      if (threads >= 1 && threads <= MAX_THREADS) {
        return threads;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException("InventoryApp --threads must be 1 to " + MAX_THREADS
        + ", was '" + value + "'");
  }

  private static Map<String, String> options(String[] args) {
    Map<String, String> options = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i], args[i + 1]);
    }
    return options;
  }

  private static String required(Map<String, String> options, String name) {
    String value = options.get(name);
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException("InventoryApp needs " + name + " <value>");
    }
    return value;
  }
}
