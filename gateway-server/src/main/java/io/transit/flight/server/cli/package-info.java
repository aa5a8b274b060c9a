/**
 * The daemon's command line ({@link io.transit.flight.server.cli.Main}, picocli): run, demo,
 * check-config, init, compact-journal; exit codes in docs/operations.md. SIGTERM drains, SIGHUP reloads.
 * {@link io.transit.flight.server.cli.JvmOptions} runs first, in its own JVM, for the launcher:
 * the heap and, through {@code CdsArchive}, the class-data-sharing archive to map or dump.
 * {@code StartWarm} ({@code --warm-up N}) serves statements from a scratch demo gateway before
 * the configured one starts, so that the JIT has compiled the serving path.
 *
 * <p>Threads: commands run on the main thread, which starts the daemon; {@code Signals}
 * handlers run on the JVM's signal dispatch thread (SIGHUP reloads there, reloads never overlap;
 * SIGTERM and SIGINT start the drain, after which the process exits 0).
 */
package io.transit.flight.server.cli;
