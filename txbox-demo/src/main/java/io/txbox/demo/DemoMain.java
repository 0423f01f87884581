package io.txbox.demo;

import io.txbox.server.Main;

/**
 * {@code java -jar txbox-demo.jar}: the chaos demo, on embedded defaults unless told otherwise;
 * {@code java -jar txbox-demo.jar quickstart}: the short tour. The relay processes the demo starts
 * are {@code txbox.jar}'s own relay command ({@link Main}), from this jar.
 *
 * <pre>
 * java -jar txbox-demo.jar                                  # embedded PostgreSQL and Kafka
 * java -jar txbox-demo.jar --broker nats --events 50000 --rate 1000
 * java -jar txbox-demo.jar quickstart --jdbc-url jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres
 * </pre>
 */
public final class DemoMain {
  private DemoMain() {}

  public static void main(String[] args) {
    System.exit(Main.run(new DemoCommand(), args));
  }
}
