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
    assertThat(Secrets.maskUrl("jdbc:postgresql://app:s3cr3t@db/app")).isEqualTo("jdbc:postgresql://***@db/app");
    assertThat(Secrets.maskUrl("jdbc:postgresql://db/app")).isEqualTo("jdbc:postgresql://db/app");
  }

  @Test
  void userInfoPasswordsAndTokensInBrokerUrisAreMasked() {
    assertThat(Secrets.mask("amqp://app:s3cr3t@rabbit:5672/vhost")).isEqualTo("amqp://***@rabbit:5672/vhost");
    assertThat(Secrets.mask("nats://app:s3cr3t@n1:4222,nats://t0k3n@n2:4222"))
        .isEqualTo("nats://***@n1:4222,nats://***@n2:4222");
    assertThat(Secrets.mask("nats://n1:4222")).isEqualTo("nats://n1:4222");
  }

  @Test
  void aUrlsUserInfoIsMaskedWholeWhateverThePasswordHolds() {
    for (String password : new String[] {"ab'cdSecret9", "ab\"cdSecret9", "ab cdSecret9", "ab/cdSecret9",
        "ab+cdSecret9", "ab@cdSecret9", "Nats,Secret9", "ab?cdSecret9", "ab:cd;Secret9"}) {
      for (String url : new String[] {"amqp://u:" + password + "@127.0.0.1:5672/",
          "jdbc:postgresql://app:" + password + "@db.invalid:5432/test",
          "jdbc:mariadb://app:" + password + "@db.invalid:3306/test", "nats://u:" + password + "@127.0.0.1:4222"}) {
        String line = "invalid --rabbitmq-uri: '" + url + "' names no host";
        assertThat(Secrets.mask(line)).as(line).doesNotContain("Secret9").contains("***@");
        assertThat(Secrets.maskUrl(url)).as(url).doesNotContain("Secret9").contains("***@");
        assertThat(Secrets.address(url)).as(url).doesNotContain("Secret9", "@");
      }
    }
  }

  @Test
  void anAtInAQueryPasswordIsNotTakenForTheUserInfo() {
    for (String url : new String[] {"jdbc:postgresql://db:5432/app?user=a&password=p@ssWord9",
        "jdbc:mariadb://db:3306/shop?password=p@ssWord9&user=a"}) {
      assertThat(Secrets.maskUrl(url)).as(url).doesNotContain("ssWord9").contains("//db:", "password=***");
      assertThat(Secrets.mask("invalid --jdbc-url: '" + url + "'")).as(url).doesNotContain("ssWord9");
    }
    assertThat(Secrets.maskUrl("jdbc:postgresql://app:s3cr3t@db/app?password=p@ssWord9"))
        .isEqualTo("jdbc:postgresql://***@db/app?password=***");
    assertThat(Secrets.address("amqp://u:p@rabbit:5672/?token=a@b")).isEqualTo("amqp://rabbit:5672");
  }

  @Test
  void anAddressIsShownAsSchemeHostAndPortAlone() {
    assertThat(Secrets.address("amqp://u:ab'cdSecret9@127.0.0.1:5672/vhost?heartbeat=5"))
        .isEqualTo("amqp://127.0.0.1:5672");
    assertThat(Secrets.address("nats://u:Nats,Secret9@n1:4222,nats://t0k3n@n2:4222,nats://n3"))
        .isEqualTo("nats://n1:4222,nats://n2:4222,nats://n3");
    assertThat(Secrets.address("https://sqs.eu-west-1.amazonaws.com")).isEqualTo("https://sqs.eu-west-1.amazonaws.com");
    assertThat(Secrets.address("kafka-1:9092,kafka-2:9092")).isEqualTo("kafka-1:9092,kafka-2:9092");
    assertThat(Secrets.address(null)).isNull();
  }

  @Test
  void userInfoIsMaskedWhereADriverQuotesOnlyTheHostPart() {
    assertThat(Secrets.mask("java.net.UnknownHostException: app:S3cretPw4@db.invalid"))
        .isEqualTo("java.net.UnknownHostException: app:***@db.invalid");
    assertThat(Secrets.mask("host 'app:S3cretPw4@db.invalid' is unknown")).isEqualTo("host 'app:***@db.invalid' is unknown");
    assertThat(Secrets.mask("jdbc:postgresql://app:S3cretPw4@db.invalid:5432/test"))
        .isEqualTo("jdbc:postgresql://***@db.invalid:5432/test");
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

  @Test
  void secretsInSqlAreMaskedAsSqlWritesThem() {
    assertThat(Secrets.maskSql("ALTER ROLE app PASSWORD 'hunter2' VALID UNTIL 'infinity'"))
        .isEqualTo("ALTER ROLE app PASSWORD '***' VALID UNTIL 'infinity'");
    assertThat(Secrets.maskSql("CREATE USER app IDENTIFIED BY 'hunter2'")).isEqualTo("CREATE USER app IDENTIFIED BY '***'");
    assertThat(Secrets.maskSql("SET PASSWORD FOR app = PASSWORD('hunter2')")).doesNotContain("hunter2");
    assertThat(Secrets.maskSql("UPDATE users SET password='it''s hunter2' WHERE id = 7"))
        .isEqualTo("UPDATE users SET password='***' WHERE id = 7");
    assertThat(Secrets.maskSql("SELECT 1 /* token: abc123 */")).isEqualTo("SELECT 1 /* token: *** */");
    assertThat(Secrets.maskSql("INSERT INTO t VALUES ('{\"api_token\": \"abc123\"}')"))
        .isEqualTo("INSERT INTO t VALUES ('{\"api_token\": \"***\"}')");
    assertThat(Secrets.maskSql("UPDATE users SET password = 'cut off by track_activity_query_si"))
        .isEqualTo("UPDATE users SET password = '***");
    assertThat(Secrets.maskSql("SELECT pg_backend_pid(), 'card 4111-1111'")).as("other literals stay")
        .isEqualTo("SELECT pg_backend_pid(), 'card 4111-1111'");
    assertThat(Secrets.maskSql(null)).isNull();
  }
}
