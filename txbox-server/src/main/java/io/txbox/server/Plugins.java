package io.txbox.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Broker modules of other authors, for the {@code txbox} command: the jars of a plugins
 * directory, loaded beside txbox's own classes. {@code java -jar} takes no class path, and the
 * container image runs {@code java -jar}, so the command finds its plugins itself: in the
 * directory {@code TXBOX_PLUGINS} names, else in {@code plugins} beside {@code txbox.jar}
 * ({@code /opt/txbox/plugins} in the image), when it exists.
 *
 * <pre>
 * mkdir plugins &amp;&amp; cp txbox-file-broker.jar plugins/
 * java -jar txbox.jar relay --broker file --file-path events.jsonl --jdbc-url ...
 * </pre>
 */
final class Plugins {
  /** The variable that names the plugins directory. */
  static final String VARIABLE = "TXBOX_PLUGINS";
  /** The directory beside {@code txbox.jar} looked in when the variable is not set. */
  static final String DEFAULT_DIRECTORY = "plugins";

  private Plugins() {}

  /**
   * A class loader for txbox's classes and every jar in the plugins directory; txbox's own loader
   * when there is none.
   *
   * @throws IllegalArgumentException when {@code TXBOX_PLUGINS} names no directory
   */
  static ClassLoader loader(Map<String, String> environment) {
    ClassLoader txbox = Plugins.class.getClassLoader();
    String named = environment.get(VARIABLE);
    Path directory = named != null ? Path.of(named) : besideTheJar();
    if (directory == null || named == null && !Files.isDirectory(directory)) {
      return txbox;
    }
    if (!Files.isDirectory(directory)) {
      throw new IllegalArgumentException("invalid " + VARIABLE + ": " + TerminalText.of(named, 200)
          + " is no directory: give the directory that holds the broker modules' jars");
    }
    List<URL> jars = jars(directory);
    return jars.isEmpty() ? txbox : new URLClassLoader("txbox-plugins", jars.toArray(URL[]::new), txbox);
  }

  /** The jars of {@code directory}, by name, so that the order is the same on every start. */
  private static List<URL> jars(Path directory) {
    try (Stream<Path> files = Files.list(directory)) {
      List<URL> jars = new ArrayList<>();
      for (Path jar : files.filter(f -> f.getFileName().toString().endsWith(".jar")).sorted().toList()) {
        jars.add(jar.toUri().toURL());
      }
      return jars;
    } catch (MalformedURLException e) {
      throw new IllegalArgumentException("cannot load the plugins in " + directory + ": " + e.getMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list the plugins in " + directory, e);
    }
  }

  /** {@code plugins} in the directory of the jar txbox runs from; null when it runs from classes. */
  private static Path besideTheJar() {
    try {
      Path code = Path.of(Plugins.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      return Files.isRegularFile(code) ? code.resolveSibling(DEFAULT_DIRECTORY) : null;
    } catch (URISyntaxException | RuntimeException e) { // no code source, or not a file
      return null;
    }
  }
}
