/**
 * Configuration and the private state directory: {@link
 * io.transit.flight.server.config.ConfigLoader} parses and validates the JSON file into a
 * {@link io.transit.flight.server.config.ResolvedConfig}; {@link
 * io.transit.flight.server.config.StateDirectory} generates and guards keys and credentials and
 * keeps the directory private; {@link io.transit.flight.server.config.StateLock} makes it one
 * daemon's. Used at start and on reload only; nothing here is shared mutable state (the lock is
 * taken on the main thread and released once by the daemon's close).
 */
package io.transit.flight.server.config;
