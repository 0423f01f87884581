package io.txbox.server;

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
  /** The brokers of the last command line built: txbox's own modules and the plugins ({@link Plugins}). */
  private static volatile List<Transport> installed = Transport.installed(BrokerOptions.class.getClassLoader());
  /**
   * Between client properties in one value: a comma that starts the next {@code name=}. An
   * environment variable or a config-file line holds one value, so several properties must share
   * it ({@code linger.ms=5,compression.type=lz4}), while a comma inside a value, as in
   * {@code ssl.enabled.protocols=TLSv1.2,TLSv1.3}, stays in the value.
   */
  static final String PROPERTY_SEPARATOR = ",(?=[^,=\\s]+=)";

  @Option(names = "--broker", defaultValue = "kafka", completionCandidates = Installed.class,
      description = "Where events go: ${COMPLETION-CANDIDATES}. Default: ${DEFAULT-VALUE}.")
  String broker;

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  /** The names of the installed brokers, for {@code --help}. */
  static final class Installed implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return Transport.names(installed).iterator();
    }
  }

  /**
   * Adds the publisher settings of each broker on {@code loader}'s class path as options to every
   * command that takes a broker.
   */
  static void addTo(CommandLine root, ClassLoader loader) {
    installed = Transport.installed(loader);
    addTo(root);
  }

  private static void addTo(CommandLine root) {
    CommandSpec spec = root.getCommandSpec();
    if (spec.mixins().values().stream().anyMatch(m -> m.userObject() instanceof BrokerOptions)) {
      for (Transport t : installed) {
        t.settings().stream().filter(s -> s.publishes() && s.role() != TransportSetting.Role.CREDENTIAL)
            .forEach(s -> spec.addOption(option(t, s)));
      }
    }
    root.getSubcommands().values().stream().distinct().forEach(BrokerOptions::addTo);
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
      case PROPERTIES -> option.type(Map.class).auxiliaryTypes(String.class, String.class)
          .splitRegex(PROPERTY_SEPARATOR).paramLabel("<name=value>[,<name=value>...]").build();
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

  /** The broker and where it is, secrets masked, for logs. */
  String describe() {
    Transport transport = transport();
    return broker + " " + Secrets.mask(transport.where(settings(transport)).orElse(null));
  }

  /** The broker's address setting; unlike in Spring, its default is not taken: a server names its broker. */
  private static Optional<TransportSetting> address(Transport transport) {
    return transport.settings().stream().filter(s -> s.role() == TransportSetting.Role.ADDRESS).findFirst();
  }

  private Transport transport() {
    try {
      return Transport.named(broker, installed);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid --broker (TXBOX_BROKER): " + e.getMessage()
          + "; the txbox command also loads the jars in its plugins directory (" + Plugins.VARIABLE
          + ", by default plugins beside txbox.jar)", e);
    }
  }

  /** The chosen broker's options that have a value, as text, by setting name. */
  private TransportSettings settings(Transport transport) {
    Map<String, String> given = new LinkedHashMap<>();
    for (TransportSetting s : transport.settings()) {
      OptionSpec option = command.findOption(name(transport, s).substring(2));
      Object value = option == null ? null : option.getValue();
      if (value instanceof Map<?, ?> properties) {
        properties.forEach((k, v) -> given.put(s.name() + "." + k, String.valueOf(v)));
      } else if (value != null && !(value instanceof Boolean flag && !flag)) {
        given.put(s.name(), String.valueOf(value));
      }
    }
    return new TransportSettings(transport, given, setting -> named(transport, setting));
  }

  /** An option as the user may have written it: {@code --nats-servers (TXBOX_NATS_SERVERS)}. */
  private static String named(Transport transport, String setting) {
    String option = transport.name() + "-" + setting.replaceFirst("\\..*", "");
    return "--" + option + " (" + EnvironmentDefaults.variable(option) + ")";
  }
}
