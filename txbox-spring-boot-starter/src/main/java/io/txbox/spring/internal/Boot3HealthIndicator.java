package io.txbox.spring.internal;

import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/** The {@code txbox} health indicator in Spring Boot 3's actuator. */
public final class Boot3HealthIndicator extends AbstractHealthIndicator {
  private final TxboxHealthCheck check;

  public Boot3HealthIndicator(TxboxHealthCheck check) {
    super("txbox health check failed");
    this.check = check;
  }

  @Override
  protected void doHealthCheck(Health.Builder health) {
    TxboxHealthCheck.Result result = check.check();
    (result.up() ? health.up() : health.down()).withDetails(result.details());
  }
}
