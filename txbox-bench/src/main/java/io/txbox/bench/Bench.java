package io.txbox.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code java -jar txbox-bench/target/txbox-bench.jar <benchmark>}: end-to-end benchmarks against
 * the local PostgreSQL and a Kafka broker they start, each beside its reference in the same run.
 */
@Command(name = "txbox-bench", mixinStandardHelpOptions = true,
    subcommands = {WriteOverhead.class, MariaDbBench.class, RelayThroughput.class, ExactlyOnceBench.class, Latency.class, InboxOverhead.class, DebeziumBench.class,
        BacklogQuery.class, Resends.class, LogicalBench.class, ConsumerThroughput.class, Settle.class, Soak.class, PoolerLatency.class, ExactlyOnceLatency.class})
public final class Bench {
  private Bench() {}

  public static void main(String[] args) {
    System.exit(new CommandLine(new Bench()).execute(args));
  }
}
