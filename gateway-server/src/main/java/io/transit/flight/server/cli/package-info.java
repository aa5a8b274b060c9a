/**
 * The daemon's command line ({@link io.transit.flight.server.cli.Main}, picocli): run, demo,
 * check-config, init; exit codes in docs/operations.md. SIGTERM drains, SIGHUP reloads.
 * {@link io.transit.flight.server.cli.JvmOptions} runs first, in its own JVM, for the launcher.
 */
package io.transit.flight.server.cli;
