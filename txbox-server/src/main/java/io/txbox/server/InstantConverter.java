package io.txbox.server;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Reads an ISO-8601 instant in UTC, such as {@code 2026-11-23T10:00:00Z}. */
final class InstantConverter implements ITypeConverter<Instant> {
  @Override
  public Instant convert(String value) {
    try {
      return Instant.parse(value.trim());
    } catch (DateTimeParseException e) {
      throw new TypeConversionException("'" + value + "' is not an instant: use UTC ISO-8601 such as"
          + " 2026-11-23T10:00:00Z");
    }
  }
}
