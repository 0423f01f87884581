package io.txbox.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The figures of one benchmark: printed as a table and written as JSON under results/. */
final class Results {
  /** One figure, with the reference it is compared to where there is one. */
  record Figure(String name, double value, String unit, String reference, Double referenceValue, Double ratio) {}

  private final String benchmark;
  private final String command;
  private final List<Figure> figures = new ArrayList<>();
  private final Map<String, Object> settings = new LinkedHashMap<>();

  Results(String benchmark, String command) {
    this.benchmark = benchmark;
    this.command = command;
  }

  void setting(String name, Object value) {
    settings.put(name, value);
  }

  void add(String name, double value, String unit) {
    figures.add(new Figure(name, value, unit, null, null, null));
  }

  void add(String name, double value, String unit, String reference, double referenceValue) {
    figures.add(new Figure(name, value, unit, reference, referenceValue, value / referenceValue));
  }

  /** Prints the table and writes {@code results/<benchmark>.json}. */
  void publish(Path directory) throws IOException {
    System.out.printf("%n%s  (%s)%n", benchmark, command);
    System.out.printf("%-66s %14s %-8s %14s %7s%n", "figure", "value", "unit", "reference", "ratio");
    for (Figure f : figures) {
      System.out.printf("%-66s " + ("share".equals(f.unit()) ? "%,14.2f" : "%,14.1f") + " %-8s %14s %7s%n",
          f.name(), f.value(), f.unit(),
          f.referenceValue() == null ? "" : String.format("%,.1f", f.referenceValue()),
          f.ratio() == null ? "" : String.format("%.2f", f.ratio()));
    }
    Files.createDirectories(directory);
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("benchmark", benchmark);
    json.put("command", command);
    json.put("measuredAt", Instant.now().toString());
    json.put("java", System.getProperty("java.version"));
    json.put("cores", Runtime.getRuntime().availableProcessors());
    json.put("settings", settings);
    json.put("figures", figures);
    Path file = directory.resolve(benchmark + ".json");
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), json);
    System.out.println("written to " + file);
  }
}
