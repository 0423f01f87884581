package io.txbox.server;

import io.txbox.Delivery;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads {@code --delivery}: {@code at-least-once} or {@code exactly-once}.
 *
 * <pre>{@code
 * @Option(names = "--delivery", converter = DeliveryConverter.class, defaultValue = "at-least-once") Delivery delivery;
 * }</pre>
 */
public final class DeliveryConverter implements ITypeConverter<Delivery> {
  /** A converter; picocli makes its own. */
  public DeliveryConverter() {}

  @Override
  public Delivery convert(String value) {
    try {
      return Delivery.parse(value);
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }
}
