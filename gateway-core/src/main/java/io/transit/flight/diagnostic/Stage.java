package io.transit.flight.diagnostic;

/** Where in a call the failure happened; written as the optional {@code stage} field. */
public enum Stage {
  AUTHENTICATION("authentication"),
  REQUEST("request"),
  COMPILATION("compilation"),
  ADMISSION("admission"),
  EXECUTION("execution"),
  OUTPUT("output"),
  RETRIEVAL("retrieval"),
  TRANSPORT("transport");

  private final String wireName;

  Stage(String wireName) {
    this.wireName = wireName;
  }

  public String wireName() {
    return wireName;
  }
}
