package io.transit.flight.diagnostic;

import io.transit.flight.crypto.Digests;
import java.math.BigInteger;
import java.util.regex.Pattern;

/**
 * One named fact of a Diagnostic v1. The value is always held as text: numbers as exact
 * decimal strings (unsigned 64-bit values above int64 maximum stay exact), digests as
 * lowercase hex. Numbers and digests are never shortened; text and path values may be.
 *
 * @param cut whether the value was already cut where it was made (e.g. the compiler bounds caller
 *     identifiers and literals), so the envelope flags it {@code "truncated":true} even when the
 *     encoder shortens nothing; only text and path values can be cut
 */
public record Fact(String name, Kind kind, String value, Location location, boolean cut) {
  /** Longest fact name; names are identifiers chosen by code, not caller input. */
  public static final int MAX_NAME_BYTES = 64;

  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_.]{0,63}");
  private static final Pattern NUMBER = Pattern.compile("-?(0|[1-9][0-9]{0,39})");
  private static final Pattern DIGEST = Pattern.compile("([0-9a-f]{2}){1,64}");

  /** The {@code kind} written in JSON. */
  public enum Kind {
    NUMBER("number"),
    TEXT("text"),
    DIGEST("digest"),
    PATH("path");

    private final String wireName;

    Kind(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    /** Whether shortening may cut or drop values of this kind. */
    public boolean shortenable() {
      return this == TEXT || this == PATH;
    }
  }

  public Fact {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("fact name: " + name + " (expected: [a-z][a-z0-9_.]{0,63})");
    }
    if (kind == null || value == null) {
      throw new IllegalArgumentException("fact " + name + ": kind and value are required");
    }
    if (kind == Kind.NUMBER && !NUMBER.matcher(value).matches()) {
      throw new IllegalArgumentException("fact " + name + ": " + value + " (expected: decimal integer)");
    }
    if (kind == Kind.DIGEST && !DIGEST.matcher(value).matches()) {
      throw new IllegalArgumentException("fact " + name + ": digest (expected: 1-64 bytes lowercase hex)");
    }
    if (kind.shortenable()) {
      value = Utf8Text.wellFormed(value);
    } else if (cut) {
      throw new IllegalArgumentException("fact " + name + ": numbers and digests are never cut");
    }
  }

  /** A fact whose value is whole as given. */
  public Fact(String name, Kind kind, String value, Location location) {
    this(name, kind, value, location, false);
  }

  public static Fact unsigned(String name, long bits) {
    return new Fact(name, Kind.NUMBER, Long.toUnsignedString(bits), null);
  }

  public static Fact signed(String name, long value) {
    return new Fact(name, Kind.NUMBER, Long.toString(value), null);
  }

  public static Fact number(String name, BigInteger value) {
    return new Fact(name, Kind.NUMBER, value.toString(), null);
  }

  public static Fact text(String name, String value) {
    return new Fact(name, Kind.TEXT, value, null);
  }

  public static Fact path(String name, String value) {
    return new Fact(name, Kind.PATH, value, null);
  }

  public static Fact digest(String name, byte[] digest) {
    return new Fact(name, Kind.DIGEST, Digests.hex(digest), null);
  }

  /** The same fact pointing at {@code where}. */
  public Fact at(Location where) {
    return new Fact(name, kind, value, where, cut);
  }

  /** A text fact whose value is a cut prefix of the original ({@code "truncated":true}). */
  public static Fact cutText(String name, String value) {
    return new Fact(name, Kind.TEXT, value, null, true);
  }

  /**
   * Converts a {@link GatewayException} fact entry: a {@code Fact} is renamed to the key,
   * {@code Long}/{@code Integer}/{@code Short}/{@code Byte} are signed numbers (use
   * {@link #unsigned} for u64 values), {@code BigInteger} a number, {@code byte[]} a digest,
   * {@code Location} an empty text fact at that location, anything else its string form as text.
   */
  public static Fact of(String name, Object value) {
    if (value instanceof Fact f) {
      return new Fact(name, f.kind, f.value, f.location, f.cut);
    }
    if (value instanceof Long || value instanceof Integer || value instanceof Short
        || value instanceof Byte) {
      return signed(name, ((Number) value).longValue());
    }
    if (value instanceof BigInteger b) {
      return number(name, b);
    }
    if (value instanceof byte[] bytes) {
      return digest(name, bytes);
    }
    if (value instanceof Location l) {
      return text(name, "").at(l);
    }
    return text(name, String.valueOf(value));
  }
}
