/**
 * The daemon's command line ({@link io.transit.flight.server.cli.Main}): run, demo,
 * check-config; SIGTERM drains, SIGHUP reloads.
 */
package io.transit.flight.server.cli;
