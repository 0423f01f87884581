package io.txbox.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SecretsTest {

  @Test
  void passwordsInJdbcUrlsAreMaskedAndTheRestIsKept() {
    assertThat(Secrets.mask("jdbc:postgresql://db:5432/app?user=app&password=s3cr3t&ssl=true"))
        .isEqualTo("jdbc:postgresql://db:5432/app?user=app&password=***&ssl=true");
    assertThat(Secrets.mask("jdbc:postgresql://db/app?sslpassword=k3y;user=app"))
        .isEqualTo("jdbc:postgresql://db/app?sslpassword=***;user=app");
  }

  @Test
  void aUrlsPasswordIsMaskedWholeWhateverItHolds() {
    for (String password : new String[] {"se,ret99", "se;ret99", "se'ret99", "se ret99", "s\"e=c&"}) {
      String url = "jdbc:postgresql://db/app?user=app&password=" + password + "&ssl=true";
      String masked = Secrets.maskUrl(url);
      assertThat(masked).as(password).doesNotContain("ret99", "se,", "se;", "se'", "se ", "s\"e")
          .startsWith("jdbc:postgresql://db/app?user=app&password=***");
    }
    assertThat(Secrets.maskUrl("jdbc:mariadb://db:3306/shop?user=app&password=a,b c&useSsl=true"))
        .isEqualTo("jdbc:mariadb://db:3306/shop?user=app&password=***&useSsl=true");
    assertThat(Secrets.maskUrl("jdbc:postgresql://app:s3cr3t@db/app")).isEqualTo("jdbc:postgresql://app:***@db/app");
    assertThat(Secrets.maskUrl("jdbc:postgresql://db/app")).isEqualTo("jdbc:postgresql://db/app");
  }

  @Test
  void userInfoPasswordsAndTokensInBrokerUrisAreMasked() {
    assertThat(Secrets.mask("amqp://app:s3cr3t@rabbit:5672/vhost")).isEqualTo("amqp://app:***@rabbit:5672/vhost");
    assertThat(Secrets.mask("nats://app:s3cr3t@n1:4222,nats://t0k3n@n2:4222"))
        .isEqualTo("nats://app:***@n1:4222,nats://***@n2:4222");
    assertThat(Secrets.mask("nats://n1:4222")).isEqualTo("nats://n1:4222");
  }

  @Test
  void userInfoIsMaskedWhereADriverQuotesOnlyTheHostPart() {
    assertThat(Secrets.mask("java.net.UnknownHostException: app:S3cretPw4@db.invalid"))
        .isEqualTo("java.net.UnknownHostException: app:***@db.invalid");
    assertThat(Secrets.mask("host 'app:S3cretPw4@db.invalid' is unknown")).isEqualTo("host 'app:***@db.invalid' is unknown");
    assertThat(Secrets.mask("jdbc:postgresql://app:S3cretPw4@db.invalid:5432/test"))
        .isEqualTo("jdbc:postgresql://app:***@db.invalid:5432/test");
    assertThat(Secrets.mask("mail ops@example.com at 10:15")).isEqualTo("mail ops@example.com at 10:15");
  }

  @Test
  void aSentenceAboutAPasswordKeepsItsWords() {
    assertThat(Secrets.mask("invalid password: at least 12 characters")).isEqualTo("invalid password: at least 12 characters");
    assertThat(Secrets.mask("password:s3cr3t")).isEqualTo("password:***");
  }

  @Test
  void secretClientPropertiesAreMasked() {
    assertThat(Secrets.mask("ssl.truststore.password=s3cr3t")).isEqualTo("ssl.truststore.password=***");
    assertThat(Secrets.mask("sasl.jaas.config=PlainLoginModule required username=\"app\" password=\"s3 cr3t\";"))
        .isEqualTo("sasl.jaas.config=PlainLoginModule required username=\"app\" password=\"***\";");
    assertThat(Secrets.mask("sasl.jaas.config=ScramLoginModule required username='app' password='s3 cr3t';"))
        .isEqualTo("sasl.jaas.config=ScramLoginModule required username='app' password='***';");
    assertThat(Secrets.mask("acks=all")).isEqualTo("acks=all");
  }
}
