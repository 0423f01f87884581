package io.txbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.spi.TransportSetting.Kind;
import io.txbox.spi.TransportSetting.Role;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TransportSettingsTest {
  private final Transport pigeon = new Transport() {
    @Override
    public String name() {
      return "pigeon";
    }

    @Override
    public String system() {
      return "pigeon";
    }

    @Override
    public List<TransportSetting> settings() {
      return List.of(
          new TransportSetting("loft", Kind.TEXT, Role.ADDRESS, "roof", "Where the birds live."),
          new TransportSetting("flight-timeout", Kind.DURATION, Role.PUBLISHER, null, "How long a flight may take."),
          new TransportSetting("birds", Kind.INTEGER, Role.CLIENTS, "2", "Birds per message."),
          new TransportSetting("ringed", Kind.FLAG, Role.CLIENTS, null, "Ring every bird."),
          new TransportSetting("feed", Kind.PROPERTIES, Role.CLIENTS, null, "What the birds eat."));
    }

    @Override
    public Publisher publisher(TransportSettings settings, SendScope sendScope) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Subscriber subscriber(TransportSettings settings, Subscription subscription) {
      throw new UnsupportedOperationException();
    }
  };

  private TransportSettings settings(Map<String, String> values) {
    return new TransportSettings(pigeon, values, setting -> "--pigeon-" + setting);
  }

  @Test
  void valuesAreReadWithTheKindTheirSettingDeclaresAndDefaultsFillTheRest() {
    TransportSettings s = settings(Map.of("flight-timeout", "90s", "ringed", "TRUE", "feed.seed", "corn",
        "feed.water", "fresh"));

    assertThat(s.text("loft")).contains("roof");
    assertThat(s.given("loft")).isFalse();
    assertThat(s.duration("flight-timeout")).contains(Duration.ofSeconds(90));
    assertThat(s.integer("birds")).contains(2);
    assertThat(s.flag("ringed")).isTrue();
    assertThat(s.properties("feed")).containsExactlyInAnyOrderEntriesOf(Map.of("seed", "corn", "water", "fresh"));
    assertThat(s.given("feed")).isTrue();
    assertThat(pigeon.where(s)).contains("roof");
  }

  @Test
  void aValueOfTheWrongKindIsRefusedWithTheSettingNamedAsTheUserWroteIt() {
    assertThatThrownBy(() -> settings(Map.of("flight-timeout", "soon")).duration("flight-timeout"))
        .hasMessage("invalid --pigeon-flight-timeout: 'soon' is not a duration: use a number with ms, s, m, h or d,"
            + " such as 500ms or 30s");
    assertThatThrownBy(() -> settings(Map.of("flight-timeout", "-PT1S")).duration("flight-timeout"))
        .hasMessageStartingWith("invalid --pigeon-flight-timeout: '-PT1S' is not a duration");
    assertThatThrownBy(() -> settings(Map.of("birds", "many")).integer("birds"))
        .hasMessage("invalid --pigeon-birds: 'many' is not a whole number");
    assertThatThrownBy(() -> settings(Map.of("ringed", "yes")).flag("ringed"))
        .hasMessage("invalid --pigeon-ringed: 'yes' is neither true nor false");
  }

  @Test
  void aSettingTheTransportDoesNotDeclareIsRefusedWithWhatItDeclares() {
    assertThatThrownBy(() -> settings(Map.of("lfot", "attic")))
        .hasMessage("--pigeon-lfot is no setting of pigeon: its settings are [loft, flight-timeout, birds, ringed, feed]");
    assertThatThrownBy(() -> settings(Map.of("loft.door", "open"))).hasMessageStartingWith("--pigeon-loft.door is no");
    assertThatThrownBy(() -> settings(Map.of("l\u001b[2Jx".repeat(30), "x")))
        .hasMessageStartingWith("--pigeon-l?[2Jx").message().doesNotContain("\u001b").contains("...");
  }

  @Test
  void aBuildersRefusalIsToldAgainWithTheSettingItNames() {
    TransportSettings s = settings(Map.of("flight-timeout", "1d"));

    assertThatThrownBy(() -> s.build(() -> {
      throw new IllegalArgumentException("flightTimeout must be <= PT1H, was PT24H");
    })).hasMessage("invalid --pigeon-flight-timeout: flightTimeout must be <= PT1H, was PT24H");
    IllegalArgumentException other = new IllegalArgumentException("topics must name one topic");
    assertThatThrownBy(() -> s.build(() -> {
      throw other;
    })).isSameAs(other);
  }

  @Test
  void aTransportIsFoundByNameAndAMissingOneNamesTheModuleToAdd() {
    ClassLoader loader = getClass().getClassLoader();
    assertThat(Transport.installed(loader)).isEmpty(); // core's own tests have no broker module

    assertThatThrownBy(() -> Transport.named("pigeon", loader))
        .hasMessage("no broker named 'pigeon' is installed: add the module that provides it to the class path"
            + " (txbox's own are io.txbox:txbox-kafka, -nats, -rabbitmq and -sqs); installed: []");
    assertThatThrownBy(() -> Transport.named("<script>", loader))
        .hasMessage("a broker's name is lower case letters, digits and dashes; installed: []");
  }
}
