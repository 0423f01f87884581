package io.txbox.server;

import io.txbox.Delivery;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSetting;
import io.txbox.spi.TransportSettings;
import io.txbox.spi.support.Secrets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Which broker events go to and how to reach it: shared by {@code txbox relay}, {@code txbox replay}
 * and {@code txbox console}. The brokers are the {@link Transport}s on the class path; each one's
 * publisher settings become options of their own, {@code --<broker>-<setting>}
 * ({@code --nats-ack-timeout}, {@code TXBOX_NATS_ACK_TIMEOUT}), added by {@link #addTo}.
 */
final class BrokerOptions {
  /**
   * Between client properties in one value: a comma that starts the next {@code name=}. An
   * environment variable or a config-file line holds one value, so several properties must share
   * it ({@code linger.ms=5,compression.type=lz4}), while a comma inside a value, as in
   * {@code ssl.enabled.protocols=TLSv1.2,TLSv1.3}, stays in the value.
   */
  static final String PROPERTY_SEPARATOR = ",(?=[^,=\\s]+=)";
  /**
   * Names of settings and client properties whose value the start line never shows: beyond what
   * names a password, a PEM key ({@code ssl.keystore.key}), a JAAS or SASL setting, credentials
   * in a {@code user.info}. Too much hidden reads worse; too little leaks.
   */
  private static final Pattern MAYBE_SECRET =
      Pattern.compile("(?i)pass|secret|token|credential|key|jaas|sasl|auth|user\\.info|private");

  @Option(names = "--broker", defaultValue = "kafka",
      description = "Where events go: ${COMPLETION-CANDIDATES}. Default: ${DEFAULT-VALUE}.")
  String broker;

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  /**
   * The brokers of this command line: txbox's own modules and the plugins ({@link Plugins}), as
   * {@link #addTo} found them. Per command line, not per JVM: two built with other plugins
   * directories do not see each other's.
   */
  private List<Transport> installed = List.of();

  /**
   * Why options such as {@code --filelog-dir} are unknown after {@code --broker filelog} when no
   * broker of that name is installed: says so, with where a plugin's jar goes. Empty otherwise,
   * and for a command that takes no broker.
   */
  static Optional<String> missingBroker(CommandLine line, List<String> args, List<String> unknown) {
    Optional<BrokerOptions> options = of(line.getCommandSpec());
    String broker = null;
    for (int i = 0; i < args.size(); i++) {
      if (args.get(i).equals("--broker") && i + 1 < args.size()) {
        broker = args.get(i + 1);
      } else if (args.get(i).startsWith("--broker=")) {
        broker = args.get(i).substring("--broker=".length());
      }
    }
    String named = broker;
    if (options.isEmpty() || named == null || Transport.names(options.get().installed).contains(named)
        || unknown.stream().noneMatch(a -> a.startsWith("--" + named + "-"))) {
      return Optional.empty();
    }
    return Optional.of("; no broker named '" + TerminalText.of(named, 40) + "' is installed (installed: "
        + String.join(", ", Transport.names(options.get().installed)) + "): a broker plugin's jar goes in the plugins"
        + " directory (" + Plugins.VARIABLE + ", by default " + Plugins.DEFAULT_DIRECTORY + " beside txbox.jar)");
  }

  /** The broker options of {@code spec}'s command, if it takes a broker. */
  private static Optional<BrokerOptions> of(CommandSpec spec) {
    return spec.mixins().values().stream().map(CommandSpec::userObject)
        .filter(BrokerOptions.class::isInstance).map(BrokerOptions.class::cast).findFirst();
  }

  /**
   * Adds the publisher settings of each broker on {@code loader}'s class path as options to every
   * command that takes a broker, and lists those brokers in its {@code --broker} help.
   */
  static void addTo(CommandLine root, ClassLoader loader) {
    addTo(root, Transport.installed(loader));
  }

  private static void addTo(CommandLine line, List<Transport> installed) {
    CommandSpec spec = line.getCommandSpec();
    of(spec).ifPresent(options -> {
      options.installed = installed;
      OptionSpec broker = spec.findOption("--broker");
      spec.remove(broker);
      spec.addOption(broker.toBuilder().completionCandidates(Transport.names(installed)).build());
      for (Transport t : installed) {
        t.settings().stream().filter(s -> s.publishes() && s.role() != TransportSetting.Role.CREDENTIAL)
            .forEach(s -> spec.addOption(option(t, s)));
      }
    });
    line.getSubcommands().values().stream().distinct().forEach(sub -> addTo(sub, installed));
  }

  private static OptionSpec option(Transport transport, TransportSetting setting) {
    OptionSpec.Builder option = OptionSpec.builder(name(transport, setting))
        .description(setting.role() == TransportSetting.Role.ADDRESS
            ? setting.description() + " Required with --broker " + transport.name() + "."
            : setting.description());
    return switch (setting.kind()) {
      case TEXT -> option.type(String.class).paramLabel("<text>").build();
      case DURATION -> option.type(Duration.class).converters(new DurationConverter()).paramLabel("<duration>").build();
      case INTEGER -> option.type(Integer.class).paramLabel("<number>").build();
      case FLAG -> option.type(boolean.class).arity("0").build();
      // split here, not by picocli: its splitter warns of unbalanced quotes with the value in the
      // warning, and a password may hold a quote (ssl.key.password=Sec"ret99)
      case PROPERTIES -> option.type(List.class).auxiliaryTypes(String.class)
          .paramLabel("<name=value>[,<name=value>...]").build();
    };
  }

  private static String name(Transport transport, TransportSetting setting) {
    return "--" + transport.name() + "-" + setting.name();
  }

  /** The publisher the options describe; every setting is checked, nothing connects yet. */
  Publisher publisher() {
    Transport transport = transport();
    TransportSettings settings = settings(transport);
    address(transport).filter(s -> !settings.given(s.name())).ifPresent(s -> {
      throw new IllegalArgumentException(named(transport, s.name()) + " is required with --broker " + broker);
    });
    return transport.publisher(settings, SendScope.NONE);
  }

  /** The chosen broker's publisher for {@code delivery}: a transactional one for exactly-once, or the refusal. */
  Publisher publisher(Delivery delivery) {
    if (delivery == Delivery.AT_LEAST_ONCE) {
      return publisher();
    }
    publisher().close(); // every setting checked as for at-least-once first
    Transport transport = transport();
    return transport.exactlyOncePublisher(settings(transport), SendScope.NONE);
  }

  /**
   * Whether the chosen broker's address was given (if blank: it is checked and refused): a command
   * that may publish (console) can do without.
   */
  boolean given() {
    Transport transport = transport();
    TransportSettings settings = settings(transport);
    Optional<TransportSetting> address = address(transport);
    return address.isPresent() ? settings.given(address.get().name()) : transport.where(settings).isPresent();
  }

  /** Checks every setting of the chosen broker, as {@link #publisher()} does, without keeping one. */
  void check() {
    publisher().close(); // builds only: nothing connects before the first publish
  }

  /**
   * The broker, where it is (a URL as its scheme, host and port alone) and the settings given for
   * it, secrets masked, for the start line: {@code kafka kafka-1:9092 (producer.linger.ms=5,
   * producer.ssl.key.password=***)}.
   */
  String describe() {
    Transport transport = transport();
    Map<String, String> values = givenValues(transport);
    String where = broker + " " + Secrets.address(transport.where(
        new TransportSettings(transport, values, setting -> named(transport, setting))).orElse(null));
    Optional<String> address = address(transport).map(TransportSetting::name);
    List<String> given = values.entrySet().stream()
        .filter(e -> address.isEmpty() || !e.getKey().equals(address.get()))
        .map(e -> TerminalText.of(e.getKey() + "=" + (MAYBE_SECRET.matcher(e.getKey()).find() ? "***"
            : Secrets.mask(e.getValue())), 200)).toList();
    return given.isEmpty() ? where : where + " (" + String.join(", ", given) + ")";
  }

  /** The broker's address setting; unlike in Spring, its default is not taken: a server names its broker. */
  private static Optional<TransportSetting> address(Transport transport) {
    return transport.settings().stream().filter(s -> s.role() == TransportSetting.Role.ADDRESS).findFirst();
  }

  private Transport transport() {
    try {
      return Transport.named(broker, installed.isEmpty()
          ? Transport.installed(BrokerOptions.class.getClassLoader()) : installed);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid --broker (TXBOX_BROKER): " + e.getMessage()
          + "; the txbox command also loads the jars in its plugins directory (" + Plugins.VARIABLE
          + ", by default plugins beside txbox.jar)", e);
    }
  }

  /** The chosen broker's options that have a value, as text, by setting name. */
  private TransportSettings settings(Transport transport) {
    return new TransportSettings(transport, givenValues(transport), setting -> named(transport, setting));
  }

  /** The chosen broker's options that have a value, by setting name; a client property as {@code producer.linger.ms}. */
  private Map<String, String> givenValues(Transport transport) {
    Map<String, String> given = new LinkedHashMap<>();
    for (TransportSetting s : transport.settings()) {
      OptionSpec option = command.findOption(name(transport, s).substring(2));
      Object value = option == null ? null : option.getValue();
      if (value instanceof List<?> values) {
        values.forEach(v -> properties(transport, s, String.valueOf(v)).forEach((k, p) -> given.put(s.name() + "." + k, p)));
      } else if (value != null && !(value instanceof Boolean flag && !flag)) {
        given.put(s.name(), String.valueOf(value));
      }
    }
    return given;
  }

  /**
   * The client properties in one value of a {@link TransportSetting.Kind#PROPERTIES} option. A
   * part without {@code =} is refused by the option's name alone: its text may be a secret.
   */
  private static Map<String, String> properties(Transport transport, TransportSetting setting, String value) {
    Map<String, String> properties = new LinkedHashMap<>();
    for (String property : value.split(PROPERTY_SEPARATOR)) {
      int eq = property.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("invalid " + named(transport, setting.name()) + ": each property is"
            + " written name=value, as in linger.ms=5,compression.type=lz4; one is not (not shown: it may be a secret)");
      }
      properties.put(property.substring(0, eq).strip(), property.substring(eq + 1));
    }
    return properties;
  }

  /** An option as the user may have written it: {@code --nats-servers (TXBOX_NATS_SERVERS)}. */
  private static String named(Transport transport, String setting) {
    String option = transport.name() + "-" + setting.replaceFirst("\\..*", "");
    return "--" + option + " (" + EnvironmentDefaults.variable(option) + ")";
  }
}
