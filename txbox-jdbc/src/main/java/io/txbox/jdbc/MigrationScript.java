package io.txbox.jdbc;

/**
 * One version of the txbox tables as plain SQL, for Flyway, Liquibase or a DBA to run instead of
 * {@link OperatorStore#migrate()}: names and bucket count filled in, and the version recorded
 * in txbox's own version table, so that {@code migrate()} later sees it as applied.
 *
 * <pre>{@code
 * for (MigrationScript script : store.migrationScripts()) {
 *   Files.writeString(flywayDir.resolve("V" + (100 + script.version()) + "__txbox_" + script.name()), script.sql());
 * }
 * }</pre>
 *
 * @param version the txbox schema version, from 1, applied in order
 * @param name the script's name, such as {@code V1__outbox.sql}
 * @param sql the statements, to run in one transaction
 */
public record MigrationScript(int version, String name, String sql) {}
