package io.txbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The public Java API of the library modules (every public type, constructor, method and field
 * outside {@code internal} packages) against {@code api/public-api.txt}, so that no public name
 * changes unnoticed, and none without a word in CHANGELOG.md: the file also holds a digest of the
 * changelog's Unreleased section as it was when the API last changed, and it is written again
 * ({@code -Dtxbox.api.update=true}) only once that section has changed since.
 */
class PublicApiTest {
  private static final Path API = Path.of("..", "api", "public-api.txt");
  private static final Path CHANGELOG = Path.of("..", "CHANGELOG.md");
  private static final String DIGEST_LINE = "# CHANGELOG.md Unreleased, sha-256: ";
  /**
   * Not libraries: their public names are for txbox's own modules and tests. Every other module
   * under {@code io.txbox} (core, SPI, JDBC, the databases, the brokers, CDC, Micrometer, Jackson,
   * the starter) is what applications compile against.
   */
  private static final List<String> NOT_LIBRARY = List.of("io.txbox.testkit", "io.txbox.server", "io.txbox.demo",
      "io.txbox.examples", "io.txbox.bench");

  @Test
  void thePublicApiIsTheOneRecordedAndEachChangeOfItIsInTheChangelog() throws Exception {
    List<String> api = publicApi();
    String unreleased = digest(unreleasedSection());
    List<String> recorded = Files.exists(API) ? Files.readAllLines(API, StandardCharsets.UTF_8) : List.of();
    List<String> recordedApi = recorded.stream().filter(l -> !l.startsWith("#")).toList();
    if (Boolean.getBoolean("txbox.api.update") && !recordedApi.equals(api)) {
      String recordedDigest = recorded.stream().filter(l -> l.startsWith(DIGEST_LINE)).findFirst()
          .map(l -> l.substring(DIGEST_LINE.length())).orElse("");
      assertThat(unreleased).as("the public API changed, and CHANGELOG.md's Unreleased section has not changed since"
          + " the API last did: say there what changed and what users do about it, then update again")
          .isNotEqualTo(recordedDigest);
      List<String> lines = new ArrayList<>();
      lines.add("# The public API of txbox's library modules: written by PublicApiTest with -Dtxbox.api.update=true.");
      lines.add(DIGEST_LINE + unreleased);
      lines.addAll(api);
      Files.createDirectories(API.getParent());
      Files.write(API, lines, StandardCharsets.UTF_8);
      return;
    }
    assertThat(api).as("the public API differs from api/public-api.txt: say what changed in CHANGELOG.md's Unreleased"
        + " section, then run ./mvnw -pl txbox-demo test -Dtest=PublicApiTest -Dtxbox.api.update=true and commit"
        + " both files").containsExactlyElementsOf(recordedApi);
  }

  /** One line per public type and per public member of it, sorted. */
  private static List<String> publicApi() {
    JavaClasses classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages("io.txbox");
    Set<String> lines = new TreeSet<>();
    for (JavaClass c : classes) {
      if (!isLibraryApi(c)) {
        continue;
      }
      lines.add(c.getName() + " " + kind(c));
      c.getConstructors().stream().filter(m -> m.getModifiers().contains(JavaModifier.PUBLIC))
          .forEach(m -> lines.add(m.getFullName()));
      c.getMethods().stream().filter(m -> m.getModifiers().contains(JavaModifier.PUBLIC) && !m.getModifiers()
          .contains(JavaModifier.SYNTHETIC) && !m.getModifiers().contains(JavaModifier.BRIDGE))
          .forEach(m -> lines.add(m.getFullName() + " : " + m.getRawReturnType().getName()));
      c.getFields().stream().filter(f -> f.getModifiers().contains(JavaModifier.PUBLIC))
          .forEach(f -> lines.add(f.getFullName() + " : " + f.getRawType().getName()));
    }
    return List.copyOf(lines);
  }

  private static boolean isLibraryApi(JavaClass c) {
    String pkg = c.getPackageName();
    boolean library = NOT_LIBRARY.stream().noneMatch(root -> pkg.equals(root) || pkg.startsWith(root + "."));
    boolean visible = c.getModifiers().contains(JavaModifier.PUBLIC)
        && c.getEnclosingClass().map(e -> e.getModifiers().contains(JavaModifier.PUBLIC)).orElse(true);
    return library && visible && !(pkg + ".").contains(".internal.") && !c.isAnonymousClass();
  }

  private static String kind(JavaClass c) {
    if (c.isRecord()) {
      return "record";
    }
    if (c.isEnum()) {
      return "enum";
    }
    return c.isInterface() ? "interface" : "class";
  }

  /** The text between {@code ## [Unreleased]} and the next release heading. */
  private static String unreleasedSection() throws IOException {
    String changelog = Files.readString(CHANGELOG, StandardCharsets.UTF_8);
    int start = changelog.indexOf("## [Unreleased]");
    assertThat(start).as("CHANGELOG.md has a ## [Unreleased] section").isNotNegative();
    int next = changelog.indexOf("\n## [", start + 1);
    return next < 0 ? changelog.substring(start) : changelog.substring(start, next);
  }

  private static String digest(String text) throws NoSuchAlgorithmException {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
  }
}
