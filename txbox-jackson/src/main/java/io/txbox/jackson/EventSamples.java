package io.txbox.jackson;

import io.txbox.Message;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A compatibility check for the application's own tests: sample events of every type and version,
 * kept as files, must still be readable as today's classes. Run it in a unit test; it fails the
 * build when a class changed in a way no upcaster covers (a field removed or renamed without one)
 * or when a version has no sample.
 *
 * <p>Samples live in a folder per type, one file per version, {@code v<version>.json} or
 * {@code v<version>-<anything>.json} for more than one:
 *
 * <pre>
 * src/test/resources/events/OrderPlaced/v1.json
 * src/test/resources/events/OrderPlaced/v2.json
 * src/test/resources/events/OrderPlaced/v3.json
 * </pre>
 *
 * <pre>{@code
 * @Test
 * void everyEventVersionStillReads() {
 *   EventSamples.check(OrderEvents.types(objectMapper), Path.of("src/test/resources/events"));
 * }
 * }</pre>
 */
public final class EventSamples {
  private static final Pattern SAMPLE = Pattern.compile("v(\\d+)(-.*)?\\.json");

  private EventSamples() {}

  /**
   * Reads every sample under {@code folder} as its type's current class, and writes and reads the
   * result once more.
   *
   * @throws AssertionError listing every problem: a sample that does not read, a version of a
   *     registered type without a sample
   */
  public static void check(EventTypes types, Path folder) {
    List<String> problems = problems(types, folder);
    if (!problems.isEmpty()) {
      throw new AssertionError("event samples in " + folder + " that today's types cannot read:\n  "
          + String.join("\n  ", problems));
    }
  }

  /** What {@link #check} would fail on; empty when all is well. */
  public static List<String> problems(EventTypes types, Path folder) {
    Objects.requireNonNull(types, "types must not be null");
    List<String> problems = new ArrayList<>();
    for (String type : types.names()) {
      Path dir = folder.resolve(type);
      for (int version = 1; version <= types.versionOf(type); version++) {
        List<Path> samples = samples(dir, version);
        if (samples.isEmpty()) {
          problems.add(type + " version " + version + ": no sample (add " + dir.resolve("v" + version + ".json") + ")");
        }
        for (Path sample : samples) {
          read(types, type, version, sample).ifPresent(problems::add);
        }
      }
    }
    return problems;
  }

  private static java.util.Optional<String> read(EventTypes types, String type, int version, Path sample) {
    try {
      Message old = Message.builder().type(type).version(version).destination("samples")
          .payload(Files.readAllBytes(sample), EventTypes.CONTENT_TYPE).build();
      Object current = types.read(old);
      Object again = types.writeAndRead(current);
      if (!again.equals(current)) {
        return java.util.Optional.of(sample + ": reads as " + current + " but writes and reads back as " + again);
      }
      return java.util.Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      return java.util.Optional.of(sample + ": " + e.getMessage());
    }
  }

  private static List<Path> samples(Path dir, int version) {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> {
        Matcher m = SAMPLE.matcher(f.getFileName().toString());
        return m.matches() && Integer.parseInt(m.group(1)) == version;
      }).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
