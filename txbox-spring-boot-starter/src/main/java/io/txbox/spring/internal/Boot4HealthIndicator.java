package io.txbox.spring.internal;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/** The {@code txbox} health indicator in Spring Boot 4, whose health types moved to spring-boot-health. */
public final class Boot4HealthIndicator extends AbstractHealthIndicator {
  private final TxboxHealthCheck check;

  public Boot4HealthIndicator(TxboxHealthCheck check) {
    super("txbox health check failed");
    this.check = check;
  }

  @Override
  protected void doHealthCheck(Health.Builder health) {
    TxboxHealthCheck.Result result = check.check();
    (result.up() ? health.up() : health.down()).withDetails(result.details());
  }
}
