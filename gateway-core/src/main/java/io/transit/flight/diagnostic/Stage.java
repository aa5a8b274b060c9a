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

  /** The stage a stored wire name denotes, or {@code fallback} for an empty or unknown name. */
  public static Stage fromWireName(String name, Stage fallback) {
    for (Stage s : values()) {
      if (s.wireName.equals(name)) {
        return s;
      }
    }
    return fallback;
  }
}
