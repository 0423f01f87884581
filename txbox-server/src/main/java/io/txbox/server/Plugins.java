package io.txbox.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Broker modules of other authors, for the {@code txbox} command: the jars of a plugins
 * directory, loaded beside txbox's own classes. {@code java -jar} takes no class path, and the
 * container image runs {@code java -jar}, so the command finds its plugins itself: in the
 * directory {@code TXBOX_PLUGINS} names, else in {@code plugins} beside {@code txbox.jar}
 * ({@code /opt/txbox/plugins} in the image), when it exists.
 *
 * <p>A plugin runs as txbox, with its database and broker credentials, for every command. So the
 * directory and each jar must be owned by the user txbox runs as (or root) and writable by their
 * owner only; anything else is refused, naming the file and the fix. Each jar loaded is logged.
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

  private static final Logger log = LoggerFactory.getLogger(Plugins.class);

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
    refuseIfOthersCanWrite(directory);
    List<URL> jars = jars(directory);
    return jars.isEmpty() ? txbox : new URLClassLoader("txbox-plugins", jars.toArray(URL[]::new), txbox);
  }

  /**
   * Refuses {@code file} when another user could have written it: owned by neither the user txbox
   * runs as nor root, or writable by its group or by others. Not checked where the file system
   * keeps no POSIX owner and permissions.
   */
  static void refuseIfOthersCanWrite(Path file) {
    PosixFileAttributes attributes;
    try {
      attributes = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (UnsupportedOperationException e) {
      return;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the owner and permissions of plugin " + file, e);
    }
    String owner = attributes.owner().getName();
    String self = System.getProperty("user.name");
    if (!owner.equals(self) && !owner.equals("root")) {
      throw new IllegalArgumentException("plugin " + TerminalText.of(file.toString(), 200) + " is owned by " + owner
          + ", not by " + self + " (who runs txbox) or root: a plugin runs as txbox, with its credentials. Give it to"
          + " " + self + " or root (chown), or take it out of the plugins directory");
    }
    Set<PosixFilePermission> permissions = attributes.permissions();
    if (permissions.contains(PosixFilePermission.GROUP_WRITE) || permissions.contains(PosixFilePermission.OTHERS_WRITE)) {
      throw new IllegalArgumentException("plugin " + TerminalText.of(file.toString(), 200) + " is writable by others ("
          + PosixFilePermissions.toString(permissions) + "): whoever can write it runs code as txbox. Make it"
          + " writable by its owner only: chmod go-w " + TerminalText.of(file.toString(), 200));
    }
  }

  /** The jars of {@code directory}, by name, so that the order is the same on every start. */
  private static List<URL> jars(Path directory) {
    try (Stream<Path> files = Files.list(directory)) {
      List<URL> jars = new ArrayList<>();
      for (Path jar : files.filter(f -> f.getFileName().toString().endsWith(".jar")).sorted().toList()) {
        refuseIfOthersCanWrite(jar);
        log.info("plugin: loading {}", jar);
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
