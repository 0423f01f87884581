package io.txbox.testkit;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import javax.sql.DataSource;

/**
 * The child JVM of {@link TransportContract}'s crash test: runs the transport's subscriber over an
 * inbox whose connection halts the JVM right after committing the message whose body ends in
 * {@value #CRASH}, so the inbox transaction is durable and the broker never hears of it.
 * Arguments: the contract class, broker, destination, schema and consumer.
 *
 * <pre>{@code
 * ChildProcess.start(List.of("-Xmx256m"), CrashingSubscriber.class.getName(), contractClass, broker, ...);
 * }</pre>
 */
public final class CrashingSubscriber {
  static final String CRASH = ":crash";
  private static final ThreadLocal<Boolean> HALT_AFTER_COMMIT = ThreadLocal.withInitial(() -> false);

  private CrashingSubscriber() {}

  public static void main(String[] args) throws Exception {
    var constructor = Class.forName(args[0]).getDeclaredConstructor();
    constructor.setAccessible(true);
    TransportContract contract = (TransportContract) constructor.newInstance();
    String schema = args[3];
    String consumer = args[4];
    DataSource dataSource = haltingAfterMarkedCommits(TestDatabase.pool(TestDatabase.jdbcUrl(), 4));
    Inbox inbox = Inbox.create(dataSource, contract.inboxStore(schema));
    InboxHandler handler = (tx, m, key) -> {
      TransportContract.insertSideEffect(tx, schema, consumer, m);
      // sticky: in a batch, the commit that follows the marked message is the batch's
      HALT_AFTER_COMMIT.set(HALT_AFTER_COMMIT.get() || new String(m.payload(), StandardCharsets.UTF_8).endsWith(CRASH));
    };
    contract.subscriber(args[1], args[2], inbox, consumer, handler).start();
    Thread.sleep(TransportContract.WAIT.toMillis()); // the test waits as long for this JVM to end
    System.exit(1); // never reached the marked message
  }

  private static DataSource haltingAfterMarkedCommits(DataSource real) {
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (proxy, method, args) -> {
          Object result = method.invoke(real, args);
          return method.getName().equals("getConnection") ? haltingAfterMarkedCommit((Connection) result) : result;
        });
  }

  private static Connection haltingAfterMarkedCommit(Connection real) {
    return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
        (proxy, method, args) -> {
          Object result = method.invoke(real, args);
          if (method.getName().equals("commit") && HALT_AFTER_COMMIT.get()) {
            Runtime.getRuntime().halt(TransportContract.HALTED_AFTER_COMMIT);
          }
          return result;
        });
  }
}
