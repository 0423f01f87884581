package io.txbox.examples.readme;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.cdc.LogicalReplication;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.SendScope;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSettings;
import io.txbox.spring.TxboxProperties;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestMariaDb;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindHandler;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.bind.handler.NoUnboundElementsBindHandler;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/**
 * Every code block of the README and of the guides in {@code docs/} works as written: the Java snippets compile against today's API,
 * the Spring properties bind to the starter's settings, the XML parses and the SQL writes an event
 * into a migrated schema. {@code ...} in a Java snippet stands for what the reader fills in.
 */
class ReadmeSnippetsTest {
  private static final Path README = Path.of("..", "README.md");
  private static final Path GUIDES = Path.of("..", "docs");
  /** Every page but the MariaDB guide, whose SQL is MariaDB's. */
  private static final java.util.function.Predicate<Path> POSTGRES_PAGES = page -> !page.endsWith("mariadb.md");
  private static final Pattern BLOCK = Pattern.compile("(?ms)^```(\\w+)\\n(.*?)^```$");
  /** The public type of a whole source file, which names its file. */
  private static final Pattern WHOLE_FILE = Pattern.compile("(?m)^public (?:final |abstract )?(?:class|interface|record) (\\w+)");
  private static final String IMPORTS = """
      import com.fasterxml.jackson.databind.ObjectMapper;
      import io.txbox.*;
      import io.txbox.cdc.*;
      import io.txbox.examples.orders.ShopEvents;
      import io.txbox.jackson.*;
      import io.txbox.jdbc.*;
      import io.txbox.kafka.*;
      import io.txbox.mariadb.*;
      import io.txbox.nats.*;
      import io.txbox.postgres.*;
      import io.txbox.rabbitmq.*;
      import io.txbox.spi.Publisher;
      import io.txbox.spring.*;
      import io.txbox.sqs.*;
      import io.txbox.testkit.InMemoryOutboxStore;
      import java.math.BigDecimal;
      import java.sql.Connection;
      import java.sql.SQLException;
      import java.time.Duration;
      import java.util.HashMap;
      import java.util.List;
      import java.util.UUID;
      import javax.sql.DataSource;
      import org.springframework.context.annotation.Bean;
      import org.springframework.jdbc.core.JdbcTemplate;
      import org.springframework.stereotype.Service;
      import org.springframework.transaction.annotation.Transactional;
      """;

  @Test
  void everyJavaSnippetCompilesAgainstTheApi() throws IOException {
    List<String> snippets = blocks("java");
    assertThat(snippets).hasSizeGreaterThanOrEqualTo(10);
    List<JavaFileObject> sources = new ArrayList<>();
    for (int i = 0; i < snippets.size(); i++) {
      sources.add(source("Snippet" + (i + 1), snippets.get(i)));
    }
    assertThat(compile(sources)).isEmpty();
  }

  @Test
  void aSnippetThatNoLongerMatchesTheApiIsCaught() throws IOException {
    String wrong = "Outbox outbox = Outbox.create(null);\noutbox.sendMessage(tx, message);";
    assertThat(compile(List.of(source("Wrong", wrong)))).singleElement().asString()
        .contains("Wrong").contains("sendMessage");
  }

  @Test
  void theSpringPropertiesBindToTheStartersSettings() throws IOException {
    List<String> blocks = blocks("properties");
    assertThat(blocks).isNotEmpty();
    for (String block : blocks) {
      Properties properties = new Properties();
      properties.load(new StringReader(block));
      Map<String, String> txbox = properties.stringPropertyNames().stream()
          .collect(Collectors.toMap(name -> name, properties::getProperty));
      assertThat(txbox).isNotEmpty().allSatisfy((name, value) -> {
        assertThat(name).startsWith("txbox.");
        assertThat(value).as("%s: a # after a value is part of the value in .properties", name).doesNotContain("#");
      });
      // A broker's own settings are its transport's: an unknown one is refused there.
      for (Transport transport : Transport.installed(getClass().getClassLoader())) {
        String prefix = "txbox." + transport.name() + ".";
        Map<String, String> own = new HashMap<>();
        txbox.forEach((name, value) -> {
          if (name.startsWith(prefix)) {
            own.put(name.substring(prefix.length()), value);
          }
        });
        txbox.keySet().removeIf(name -> name.startsWith(prefix));
        TransportSettings settings = new TransportSettings(transport, own, setting -> prefix + setting);
        if (transport.name().equals("kafka")) { // builds without connecting: checks each producer property
          transport.publisher(settings, SendScope.NONE).close();
        }
      }
      // Unknown names and values that do not parse (a comment after a value, say) fail here.
      new Binder(new MapConfigurationPropertySource(txbox))
          .bind("txbox", Bindable.of(TxboxProperties.class), new NoUnboundElementsBindHandler(BindHandler.DEFAULT));
    }
  }

  @Test
  void theXmlIsWellFormed() throws Exception {
    List<String> blocks = blocks("xml");
    assertThat(blocks).as("the README's dependency blocks").isNotEmpty();
    for (String block : blocks) {
      DocumentBuilderFactory.newInstance().newDocumentBuilder()
          .parse(new org.xml.sax.InputSource(new StringReader(block)));
    }
  }

  @Test
  void thePlainSqlWriteIsAnEventInAMigratedSchema() throws Exception {
    List<String> blocks = blocks("sql", POSTGRES_PAGES).stream().filter(b -> !b.contains("txbox_emit(")).toList();
    assertThat(blocks).isNotEmpty();
    try (TestDatabase db = TestDatabase.create()) {
      PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
      try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
        s.execute("SET search_path TO " + db.schema());
        for (String block : blocks) {
          s.execute(block);
        }
        try (ResultSet rows = s.executeQuery("SELECT count(*) FROM txbox_outbox")) {
          rows.next();
          assertThat(rows.getInt(1)).isEqualTo(blocks.size());
        }
      }
    }
  }

  @Test
  void theMariaDbPlainSqlWriteIsAnEventInAMigratedDatabase() throws Exception {
    List<String> blocks = blocks("sql", page -> page.endsWith("mariadb.md"));
    assertThat(blocks).isNotEmpty();
    try (TestMariaDb db = TestMariaDb.create()) {
      MariaDbOutboxStore.builder(db.dataSource()).build().migrate();
      for (String block : blocks) {
        db.execute(block);
      }
      assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox")).isEqualTo(blocks.size());
    }
  }

  @Test
  void theEmitFunctionWritesAWalMessageTheSlotDecodes() throws Exception {
    List<String> blocks = blocks("sql", POSTGRES_PAGES).stream().filter(b -> b.contains("txbox_emit(")).toList();
    assertThat(blocks).isNotEmpty();
    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setServerConfig("wal_level", "logical").start();
        HikariDataSource pool = TestDatabase.pool(postgres.getJdbcUrl("postgres", "postgres"), 2)) {
      LogicalReplication.builder(pool, PostgresOutboxStore.builder(pool).build()).build().migrate();
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("SET synchronous_commit = on"); // decoding reads only WAL already flushed
        for (String block : blocks) {
          s.execute(block);
        }
        try (ResultSet changes = s.executeQuery("SELECT count(*) FROM pg_logical_slot_peek_binary_changes("
            + "'txbox', NULL, NULL, 'proto_version', '1', 'publication_names', 'txbox', 'messages', 'true')"
            + " WHERE substring(data from 1 for 1) = 'M'")) {
          changes.next();
          assertThat(changes.getInt(1)).isEqualTo(blocks.size());
        }
      }
    }
  }

  private static List<String> blocks(String language) throws IOException {
    return blocks(language, page -> true);
  }

  private static List<String> blocks(String language, java.util.function.Predicate<Path> from) throws IOException {
    List<String> blocks = new ArrayList<>();
    for (Path page : pages().stream().filter(from).toList()) {
      Matcher m = BLOCK.matcher(Files.readString(page));
      while (m.find()) {
        if (m.group(1).equals(language)) {
          blocks.add(m.group(2));
        }
      }
    }
    return blocks;
  }

  /** The README, then the guides in {@code docs/} by name. */
  private static List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>(List.of(README));
    try (Stream<Path> guides = Files.list(GUIDES)) {
      guides.filter(p -> p.getFileName().toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  /**
   * A snippet of statements becomes a method body; one with beans or classes, a class body; a
   * whole source file (it starts with its package) is compiled as it is.
   */
  private static JavaFileObject source(String name, String snippet) {
    Matcher wholeFile = WHOLE_FILE.matcher(snippet);
    if (snippet.startsWith("package ") && wholeFile.find()) {
      return fileObject(wholeFile.group(1), snippet);
    }
    String code = snippet.replace("= ...;", "= null;");
    boolean members = code.lines().anyMatch(line -> line.startsWith("@"));
    String body = members ? code : "void run() throws Exception {\n" + code + "\n}";
    String text = "package io.txbox.examples.readme;\n" + IMPORTS
        + "@SuppressWarnings(\"unused\") class " + name + " extends ReadmeContext {\n" + body + "\n}\n";
    return fileObject(name, text);
  }

  private static JavaFileObject fileObject(String name, String text) {
    return new SimpleJavaFileObject(java.net.URI.create("string:///" + name + ".java"), JavaFileObject.Kind.SOURCE) {
      @Override
      public CharSequence getCharContent(boolean ignoreEncodingErrors) {
        return text;
      }
    };
  }

  /** The compiler's errors, each with the snippet class and line it is in. */
  private static List<String> compile(List<JavaFileObject> sources) throws IOException {
    JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    Path out = Files.createTempDirectory("readme-snippets");
    List<String> options = List.of("-classpath", System.getProperty("java.class.path"), "-d", out.toString(),
        "-proc:none");
    compiler.getTask(null, null, diagnostics, options, null, sources).call();
    return diagnostics.getDiagnostics().stream()
        .filter(d -> d.getKind() == javax.tools.Diagnostic.Kind.ERROR)
        .map(d -> d.getSource().getName() + ":" + d.getLineNumber() + ": " + d.getMessage(null))
        .toList();
  }
}
