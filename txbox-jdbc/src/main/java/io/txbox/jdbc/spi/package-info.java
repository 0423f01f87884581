/**
 * For the authors of a database module: the table outbox, inbox and operator tools written once
 * for every database, and what a database gives them (a {@link io.txbox.jdbc.spi.SqlDialect},
 * {@link io.txbox.jdbc.spi.TableNames}, a {@link io.txbox.jdbc.spi.LogKey}, its statements).
 * The front ends (the {@code txbox} command, the Spring Boot starter, the demo) find a database
 * module through its {@link io.txbox.jdbc.spi.Database}, listed in
 * {@code META-INF/services/io.txbox.jdbc.spi.Database}. Applications build the store of their
 * database module ({@code PostgresOutboxStore.builder(dataSource)}), not from this package.
 *
 * <pre>{@code
 * OperatorStore operator = new JdbcOperatorStore(dataSource, new JdbcOperatorStore.Parts(tables,
 *     MyDbDialect.INSTANCE, MyDbLogKey.INSTANCE, tables.render("{outbox}"), status, relay, migration));
 * }</pre>
 *
 * <p>docs/databases.md says what each class does, what it takes from the database, and what a
 * new database module implements and is held to.
 */
package io.txbox.jdbc.spi;
