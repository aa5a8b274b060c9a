package io.transit.flight.server.config;

/** The configuration or state directory is unusable; the message names the field or file. */
public class ConfigException extends Exception {
  private static final long serialVersionUID = 1L;

  public ConfigException(String message) {
    super(message);
  }

  public ConfigException(String message, Throwable cause) {
    super(message, cause);
  }
}
