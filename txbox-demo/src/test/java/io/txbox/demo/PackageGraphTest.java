package io.txbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The rules of txbox's package graph, on the compiled classes of every module the demo's tests
 * see: the library modules, the testkit, the starter, the server and the demo itself.
 */
class PackageGraphTest {

  /** Each module's root package (its Automatic-Module-Name); core's is {@code io.txbox}. */
  private static final List<String> MODULE_ROOTS = List.of("io.txbox.jdbc", "io.txbox.postgres",
      "io.txbox.mariadb", "io.txbox.kafka", "io.txbox.nats", "io.txbox.rabbitmq", "io.txbox.sqs", "io.txbox.cdc",
      "io.txbox.micrometer", "io.txbox.jackson", "io.txbox.testkit", "io.txbox.spring", "io.txbox.server",
      "io.txbox.demo", "io.txbox.examples");
  private static final String CORE = "io.txbox";

  private static final JavaClasses TXBOX = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages(CORE);

  @Test
  void everyModuleIsOnTheClassPathOfThisTest() {
    Set<String> found = new TreeSet<>();
    TXBOX.forEach(c -> found.add(moduleOf(c.getPackageName())));
    assertThat(found).as("a module missing here would escape the rules below")
        .containsAll(MODULE_ROOTS).contains(CORE);
  }

  @Test
  void noModuleReachesIntoAnotherModulesInternals() {
    List<String> violations = new ArrayList<>();
    for (JavaClass c : TXBOX) {
      for (Dependency d : c.getDirectDependenciesFromSelf()) {
        String target = d.getTargetClass().getPackageName();
        boolean internal = target.startsWith(CORE + ".") && (target + ".").contains(".internal.");
        if (internal && !moduleOf(c.getPackageName()).equals(moduleOf(target))) {
          violations.add(d.getDescription());
        }
      }
    }
    assertThat(violations).as("an internal package is its module's own; give what others need a public home")
        .isEmpty();
  }

  /**
   * The starter and the {@code txbox} command name no broker: each broker module registers its
   * {@code Transport}, so that a fifth broker needs no change outside its module.
   */
  @Test
  void theStarterAndTheServerNameNoBroker() {
    List<String> brokers = List.of("io.txbox.kafka", "io.txbox.nats", "io.txbox.rabbitmq", "io.txbox.sqs");
    List<String> violations = new ArrayList<>();
    for (JavaClass c : TXBOX) {
      String from = moduleOf(c.getPackageName());
      if (!from.equals("io.txbox.spring") && !from.equals("io.txbox.server")) {
        continue;
      }
      for (Dependency d : c.getDirectDependenciesFromSelf()) {
        if (brokers.contains(moduleOf(d.getTargetClass().getPackageName()))) {
          violations.add(d.getDescription());
        }
      }
    }
    assertThat(violations).as("find brokers through io.txbox.spi.Transport").isEmpty();
  }

  /**
   * The {@code txbox} command and the starter name no database: they find the URL's
   * {@code Database} through {@link java.util.ServiceLoader} and ask it by capability, so that a
   * third database is one module. Logical decoding, PostgreSQL's alone, takes the store the
   * {@code Database} built and refuses another database's.
   */
  @Test
  void theServerAndTheStarterNameNoDatabaseButThroughItsDatabase() {
    assertThat(databasesNamedBy("io.txbox.jdbc")).as("the JDBC core is every database's: name none").isEmpty();
    assertThat(databasesNamedBy("io.txbox.server")).as("find databases through io.txbox.jdbc.spi.Database").isEmpty();
    assertThat(databasesNamedBy("io.txbox.spring")).as("find databases through io.txbox.jdbc.spi.Database").isEmpty();
  }

  /**
   * Nor does their option handling or the JDBC core reach a driver: what a driver needs (pgjdbc's
   * {@code prepareThreshold}, an unpooled data source, the session-id query a pooler check asks)
   * comes from the URL's {@code Database}.
   */
  @Test
  void theServerTheStarterAndTheJdbcCoreReachNoDriver() {
    for (String module : List.of("io.txbox.jdbc", "io.txbox.server", "io.txbox.spring")) {
      assertThat(dependenciesOf(module, target -> DRIVERS.stream().anyMatch(target::startsWith)))
          .as("%s: ask the URL's io.txbox.jdbc.spi.Database for what a driver does", module).isEmpty();
    }
  }

  /**
   * An application builds its database module's store with that module's builder, the one public
   * way per database: the examples, written as applications are, reach nothing of
   * {@code io.txbox.jdbc.spi}, which is the database modules' and the front ends'.
   */
  @Test
  void anApplicationBuildsItsStoreWithoutTheDatabaseModulesSpi() {
    assertThat(dependenciesOf("io.txbox.examples", target -> target.startsWith("io.txbox.jdbc.spi.")))
        .as("build the store with its module's builder (PostgresOutboxStore.builder)").isEmpty();
  }

  /**
   * Logical decoding is one front end's business: outside the classes that run or show the logical
   * relay, the command and the starter import nothing of {@code io.txbox.cdc}, and the JDBC core
   * nothing at all.
   */
  @Test
  void onlyTheLogicalFrontEndsReachTheLogicalRelay() {
    Set<String> logicalFrontEnds = Set.of("io.txbox.server.LogicalCommand", "io.txbox.server.LogicalOptions",
        "io.txbox.server.MigrateCommand", "io.txbox.server.RelayCommand", "io.txbox.server.StatusCommand", "io.txbox.server.StatusReport",
        "io.txbox.spring.TxboxAutoConfiguration", "io.txbox.spring.TxboxMetricsAutoConfiguration",
        "io.txbox.spring.internal.LogicalRelayState");
    List<String> violations = new ArrayList<>();
    for (String module : List.of("io.txbox.jdbc", "io.txbox.server", "io.txbox.spring")) {
      for (JavaClass c : TXBOX) {
        if (moduleOf(c.getPackageName()).equals(module) && !logicalFrontEnds.contains(topLevel(c))) {
          c.getDirectDependenciesFromSelf().stream()
              .filter(d -> moduleOf(d.getTargetClass().getPackageName()).equals("io.txbox.cdc"))
              .forEach(d -> violations.add(d.getDescription()));
        }
      }
    }
    assertThat(violations).as("io.txbox.cdc outside the logical front ends").isEmpty();
  }

  /**
   * The JDBC core's SQL is every database's: PostgreSQL's functions ({@code pg_...}) live in
   * txbox-postgres. Comments may name them.
   */
  @Test
  void theJdbcCoreCallsNoPostgresFunction() throws IOException {
    Pattern postgresFunction = Pattern.compile("\\bpg_[a-z_]+\\s*\\(");
    List<String> found = new ArrayList<>();
    try (Stream<Path> files = Files.walk(Path.of("..", "txbox-jdbc", "src", "main", "java"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        List<String> lines = Files.readAllLines(f);
        for (int i = 0; i < lines.size(); i++) {
          boolean comment = lines.get(i).strip().startsWith("*") || lines.get(i).strip().startsWith("//");
          if (!comment && postgresFunction.matcher(lines.get(i)).find()) {
            found.add(f.getFileName() + ":" + (i + 1) + ": " + lines.get(i).strip());
          }
        }
      }
    }
    assertThat(found).as("ask the URL's io.txbox.jdbc.spi.Database for the SQL").isEmpty();
  }

  private static final List<String> DRIVERS = List.of("org.postgresql.", "org.mariadb.", "com.mysql.");

  private static List<String> dependenciesOf(String module, java.util.function.Predicate<String> targetPackage) {
    List<String> found = new ArrayList<>();
    for (JavaClass c : TXBOX) {
      if (moduleOf(c.getPackageName()).equals(module)) {
        c.getDirectDependenciesFromSelf().stream()
            .filter(d -> targetPackage.test(d.getTargetClass().getPackageName() + "."))
            .forEach(d -> found.add(d.getDescription()));
      }
    }
    return found;
  }

  private static final List<String> DATABASES = List.of("io.txbox.postgres", "io.txbox.mariadb");

  private static List<String> databasesNamedBy(String module) {
    List<String> named = new ArrayList<>();
    for (JavaClass c : TXBOX) {
      if (!moduleOf(c.getPackageName()).equals(module)) {
        continue;
      }
      for (Dependency d : c.getDirectDependenciesFromSelf()) {
        JavaClass target = d.getTargetClass();
        boolean ofADatabase = DATABASES.contains(moduleOf(target.getPackageName()))
            || target.getSimpleName().startsWith("Postgres") || target.getSimpleName().startsWith("MariaDb");
        if (ofADatabase) {
          named.add(d.getDescription());
        }
      }
    }
    return named;
  }

  /**
   * Types of core that depend on each other in a circle must share a package: a circle across
   * packages (an SPI that needs a type nested in an API class that needs the SPI) means neither
   * package can be understood, or moved, without the other.
   */
  @Test
  void coreHasNoCircleOfTypesAcrossPackages() {
    Map<String, Set<String>> graph = new TreeMap<>();
    for (JavaClass c : TXBOX) {
      if (!moduleOf(c.getPackageName()).equals(CORE)) {
        continue;
      }
      Set<String> targets = graph.computeIfAbsent(topLevel(c), k -> new TreeSet<>());
      for (Dependency d : c.getDirectDependenciesFromSelf()) {
        JavaClass target = d.getTargetClass();
        if (target.getPackageName().startsWith(CORE) && moduleOf(target.getPackageName()).equals(CORE)
            && !topLevel(target).equals(topLevel(c))) {
          targets.add(topLevel(target));
        }
      }
    }
    List<Set<String>> acrossPackages = new ArrayList<>();
    for (Set<String> circle : stronglyConnected(graph)) {
      Set<String> packages = new TreeSet<>();
      circle.forEach(type -> packages.add(type.substring(0, type.lastIndexOf('.'))));
      if (packages.size() > 1) {
        acrossPackages.add(circle);
      }
    }
    assertThat(acrossPackages).as("circles of core types that span packages").isEmpty();
  }

  private static String moduleOf(String packageName) {
    return MODULE_ROOTS.stream()
        .filter(root -> packageName.equals(root) || packageName.startsWith(root + "."))
        .max(Comparator.comparingInt(String::length))
        .orElse(CORE);
  }

  private static String topLevel(JavaClass c) {
    JavaClass outer = c;
    while (outer.getEnclosingClass().isPresent()) {
      outer = outer.getEnclosingClass().get();
    }
    return outer.getName();
  }

  /**
   * Tarjan's algorithm: the graph's strongly connected components of more than one type. ArchUnit's
   * own cycle rule works on slices, and a slice per package would report the circle every API has
   * ({@code Relay} uses {@code spi.Publisher}, which uses {@code Message}), a slice per type every
   * circle inside a package.
   */
  private static List<Set<String>> stronglyConnected(Map<String, Set<String>> graph) {
    Map<String, Integer> index = new HashMap<>();
    Map<String, Integer> low = new HashMap<>();
    Deque<String> stack = new ArrayDeque<>();
    Set<String> onStack = new TreeSet<>();
    List<Set<String>> components = new ArrayList<>();
    for (String start : graph.keySet()) {
      if (!index.containsKey(start)) {
        visit(start, graph, index, low, stack, onStack, components);
      }
    }
    return components;
  }

  private static void visit(String v, Map<String, Set<String>> graph, Map<String, Integer> index,
      Map<String, Integer> low, Deque<String> stack, Set<String> onStack, List<Set<String>> components) {
    index.put(v, index.size());
    low.put(v, index.get(v));
    stack.push(v);
    onStack.add(v);
    for (String w : graph.getOrDefault(v, Set.of())) {
      if (!index.containsKey(w)) {
        visit(w, graph, index, low, stack, onStack, components);
        low.put(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.contains(w)) {
        low.put(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v).equals(index.get(v))) {
      Set<String> component = new TreeSet<>();
      String w;
      do {
        w = stack.pop();
        onStack.remove(w);
        component.add(w);
      } while (!w.equals(v));
      if (component.size() > 1) {
        components.add(component);
      }
    }
  }
}
