package io.txbox.spi.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Start-up checks of the libraries an application's build chose for txbox: a broker client older
 * than the one txbox is built and tested with (which a build's dependency management, such as
 * {@code spring-boot-starter-parent}'s, can pick without a word), and an slf4j-api 1.x that sends
 * every log line nowhere. Each is said once, with the setting that fixes it; nothing is refused.
 *
 * <p>Besides its own version, a broker module lists in {@code also-tested} the versions that Spring
 * Boot 3.5 and 4 manage, which the starter's tests run with; those are not warned about.
 *
 * <pre>{@code
 * ClientVersions.warnIfOlder("kafka-clients", AppInfoParser.getVersion(), KafkaPublisher.class, "kafka.version");
 * }</pre>
 */
public final class ClientVersions {
  private static final Logger log = LoggerFactory.getLogger(ClientVersions.class);
  private static final Set<String> SAID = ConcurrentHashMap.newKeySet();

  private ClientVersions() {}

  /**
   * The client version txbox was built and tested with, from {@code tested-client.properties}
   * beside {@code module} (filled in by the build).
   */
  public static String tested(Class<?> module) {
    return testedClient(module).getProperty("version", "unknown");
  }

  /**
   * The other client versions txbox's tests run with, from {@code also-tested} in the same file:
   * those that Spring Boot 3.5 and 4 manage.
   */
  public static List<String> alsoTested(Class<?> module) {
    String list = testedClient(module).getProperty("also-tested", "");
    return Arrays.stream(list.split(",")).map(String::trim).filter(v -> !v.isEmpty()).toList();
  }

  private static Properties testedClient(Class<?> module) {
    try (InputStream in = module.getResourceAsStream("tested-client.properties")) {
      Properties p = new Properties();
      if (in != null) {
        p.load(in);
      }
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Warns, once per client, when {@code found} is older than the version {@code module} is tested
   * with in its major or minor version, unless that line is one of its {@linkplain #alsoTested
   * other tested versions}; checks slf4j first.
   *
   * @param bootProperty the property with which {@code spring-boot-starter-parent} picks this
   *     client's version, or null when Boot does not manage it
   * @return the warning, when there was one
   */
  public static Optional<String> warnIfOlder(String client, String found, Class<?> module, String bootProperty) {
    warnIfLoggingGoesNowhere();
    Optional<String> warning = olderWarning(client, found, tested(module), alsoTested(module), bootProperty);
    warning.filter(w -> SAID.add(client)).ifPresent(log::warn);
    return warning;
  }

  /** The warning for {@code found} against {@code tested}, when it is older and not also tested. */
  static Optional<String> olderWarning(
      String client, String found, String tested, List<String> alsoTested, String bootProperty) {
    if (found == null || tested == null || compareMinor(found, tested) >= 0
        || alsoTested.stream().anyMatch(other -> compareMinor(found, other) == 0)) {
      return Optional.empty();
    }
    return Optional.of(client + " " + found + " is on the class path, older than the " + tested
        + " txbox is built and tested with: an untested combination. Pick " + tested + " by importing"
        + " io.txbox:txbox-bom" + (bootProperty == null ? "" : ", or, under spring-boot-starter-parent (whose"
        + " versions win over an imported BOM), by setting the Maven property " + bootProperty + " to " + tested));
  }

  /** Compares major and minor version numbers; parts that are not numbers count as 0. */
  static int compareMinor(String a, String b) {
    int[] x = majorMinor(a);
    int[] y = majorMinor(b);
    return x[0] != y[0] ? Integer.compare(x[0], y[0]) : Integer.compare(x[1], y[1]);
  }

  private static int[] majorMinor(String version) {
    String[] parts = version.split("[.-]");
    return new int[] {number(parts, 0), number(parts, 1)};
  }

  private static int number(String[] parts, int i) {
    try {
      return i < parts.length ? Integer.parseInt(parts[i]) : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * Prints to standard error, once, when slf4j-api 1.x is on the class path without a 1.x
   * binding: then slf4j logs nothing at all, so this cannot go through slf4j.
   */
  public static void warnIfLoggingGoesNowhere() {
    boolean api2 = present("org.slf4j.spi.SLF4JServiceProvider");
    boolean binding1 = present("org.slf4j.impl.StaticLoggerBinder");
    loggingWarning(api2, binding1).filter(w -> SAID.add("slf4j")).ifPresent(System.err::println);
  }

  /** The warning for an slf4j API and binding, when their logs go nowhere. */
  static Optional<String> loggingWarning(boolean api2, boolean binding1) {
    if (api2 || binding1) {
      return Optional.empty();
    }
    return Optional.of("txbox: slf4j-api 1.x is on the class path without a 1.x binding, so txbox's log lines"
        + " (and every other library's) go nowhere. txbox is built with slf4j-api 2: add org.slf4j:slf4j-api 2.0.x"
        + " to your dependencies, or import io.txbox:txbox-bom, which manages it");
  }

  private static boolean present(String className) {
    try {
      Class.forName(className, false, ClientVersions.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
