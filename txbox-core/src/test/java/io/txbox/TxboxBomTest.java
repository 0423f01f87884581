package io.txbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.lang.model.SourceVersion;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/** txbox-bom says what the build uses: the same client versions, and every library module. */
class TxboxBomTest {
  private static final Path ROOT = Path.of("..");
  /** Modules users do not add to their builds: applications, examples, benchmarks, the BOM itself. */
  private static final List<String> NOT_LIBRARIES =
      List.of("txbox-bom", "txbox-spring-boot4-tests", "txbox-examples", "txbox-server", "txbox-demo", "txbox-bench",
          "txbox-bench-debezium");

  @Test
  void theBomPinsTheVersionsTheBuildIsTestedWith() throws Exception {
    Map<String, String> bom = properties(read(ROOT.resolve("txbox-bom/pom.xml")));
    Map<String, String> build = properties(read(ROOT.resolve("pom.xml")));
    assertThat(bom).isNotEmpty();
    bom.forEach((name, version) -> assertThat(build.get(name)).as(name).isEqualTo(version));
  }

  /**
   * The client of every database and broker a library module talks to is pinned by the BOM, so a
   * plain Maven project that imports it and adds, say, txbox-mariadb and its driver needs no
   * version of its own (it once failed with "dependency.version ... is missing" for MariaDB's).
   */
  @Test
  void theBomPinsEveryDatabaseAndBrokerClientTheLibrariesUse() throws Exception {
    List<String> managed = new ArrayList<>();
    NodeList dependencies = read(ROOT.resolve("txbox-bom/pom.xml")).getElementsByTagName("dependency");
    for (int i = 0; i < dependencies.getLength(); i++) {
      Element d = (Element) dependencies.item(i);
      managed.add(text(d, "groupId") + ":" + text(d, "artifactId"));
    }
    assertThat(managed).contains("org.postgresql:postgresql", "org.mariadb.jdbc:mariadb-java-client",
        "org.apache.kafka:kafka-clients", "io.nats:jnats", "com.rabbitmq:amqp-client", "software.amazon.awssdk:sqs",
        "com.zaxxer:HikariCP", "org.slf4j:slf4j-api");
  }

  private static String text(Element e, String tag) {
    return e.getElementsByTagName(tag).item(0).getTextContent().trim();
  }

  @Test
  void theBomListsEveryLibraryModule() throws Exception {
    List<String> libraries = new ArrayList<>(texts(read(ROOT.resolve("pom.xml")), "module"));
    libraries.removeAll(NOT_LIBRARIES);
    assertThat(texts(read(ROOT.resolve("txbox-bom/pom.xml")), "artifactId")).containsAll(libraries);
  }

  /**
   * Every jar carries an Automatic-Module-Name (the parent's jar plugin writes {@code
   * ${txbox.module}}), so that module-path users get a stable name, not one derived from the file
   * name: each module's root package, which no other module holds.
   */
  @Test
  void everyModuleIsNamedForTheModulePathAfterItsOwnRootPackage() throws Exception {
    assertThat(texts(read(ROOT.resolve("pom.xml")), "Automatic-Module-Name")).containsExactly("${txbox.module}");
    List<String> names = new ArrayList<>();
    for (String module : texts(read(ROOT.resolve("pom.xml")), "module")) {
      if (module.equals("txbox-bom")) {
        continue; // a pom, no jar
      }
      String name = properties(read(ROOT.resolve(module).resolve("pom.xml"))).get("txbox.module");
      assertThat(name).as(module + "'s txbox.module").isNotNull();
      assertThat(SourceVersion.isName(name)).as(name + " is a module name").isTrue();
      Path sources = ROOT.resolve(module).resolve("src/main/java");
      if (Files.isDirectory(sources)) {
        try (Stream<Path> files = Files.list(sources.resolve(name.replace('.', '/')))) {
          assertThat(files.anyMatch(f -> f.toString().endsWith(".java"))).as(module + " has classes in " + name).isTrue();
        }
      }
      names.add(name);
    }
    assertThat(names).doesNotHaveDuplicates();
  }

  private static Document read(Path pom) throws Exception {
    return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
  }

  private static Map<String, String> properties(Document pom) {
    Map<String, String> properties = new HashMap<>();
    NodeList children = ((Element) pom.getElementsByTagName("properties").item(0)).getChildNodes();
    for (int i = 0; i < children.getLength(); i++) {
      if (children.item(i) instanceof Element e) {
        properties.put(e.getTagName(), e.getTextContent().trim());
      }
    }
    return properties;
  }

  private static List<String> texts(Document pom, String tag) {
    List<String> texts = new ArrayList<>();
    NodeList nodes = pom.getElementsByTagName(tag);
    for (int i = 0; i < nodes.getLength(); i++) {
      texts.add(nodes.item(i).getTextContent().trim());
    }
    return texts;
  }
}
