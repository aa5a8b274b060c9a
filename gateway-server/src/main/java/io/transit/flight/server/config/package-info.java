/**
 * Configuration and the private state directory: {@link
 * io.transit.flight.server.config.ConfigLoader} parses and validates the JSON file into a
 * {@link io.transit.flight.server.config.ResolvedConfig}; {@link
 * io.transit.flight.server.config.StateDirectory} generates and guards keys and credentials.
 * Used at start and on reload only; nothing here is shared mutable state.
 */
package io.transit.flight.server.config;
