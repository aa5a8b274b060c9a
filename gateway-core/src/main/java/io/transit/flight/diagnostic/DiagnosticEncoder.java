package io.transit.flight.diagnostic;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Writes a {@link Diagnostic} as Diagnostic v1 JSON within a byte bound, shortening in the
 * documented order ({@code docs/diagnostic-v1.md}, "Shortening"):
 *
 * <ol>
 *   <li>the full form, if it fits;
 *   <li>the message, text/path fact values and location paths cut to one common byte cap (the
 *       largest that fits, at least {@link #MIN_TEXT_CAP}) and marked truncated;
 *   <li>text/path fact values and location paths made unavailable, the message cut to the
 *       largest cap that fits (at least {@link #MIN_MESSAGE_CAP});
 *   <li>as 3 with the message at {@link #MIN_MESSAGE_CAP}, keeping the longest prefix of facts
 *       that fits and counting the rest in {@code facts_omitted}.
 * </ol>
 *
 * Code, status, cause, outcome, stage, identity, numbers, digests, location coordinates and
 * actions are never altered. Each step is monotone in its cap, so a binary search finds the
 * largest cap that fits. Stateless; any thread.
 */
final class DiagnosticEncoder {
  /** Smallest common cap step 2 uses before giving up on keeping text. */
  static final int MIN_TEXT_CAP = 48;

  /** Smallest message cap; the envelope without facts always fits with it. */
  static final int MIN_MESSAGE_CAP = 32;

  /** Smallest bound accepted: the largest envelope without facts is well below it. */
  static final int MIN_BOUND = 1024;

  private static final JsonFactory JSON = new JsonFactory();
  private static final int UNLIMITED = Integer.MAX_VALUE;

  /** How much of a diagnostic to write. */
  private record Plan(int messageCap, int textCap, boolean textUnavailable, int keptFacts) {}

  private DiagnosticEncoder() {}

  static byte[] encode(Diagnostic d, int maxBytes) {
    if (maxBytes < MIN_BOUND) {
      throw new IllegalArgumentException("maxBytes: " + maxBytes + " (expected: >= " + MIN_BOUND + ")");
    }
    int n = d.facts().size();
    byte[] full = write(d, new Plan(UNLIMITED, UNLIMITED, false, n));
    if (full.length <= maxBytes) {
      return full;
    }
    // No single text longer than the bound can fit, so caps above it need not be tried.
    int longest = Math.min(longestText(d), maxBytes);
    int cap = largestFitting(MIN_TEXT_CAP, longest, c -> write(d, new Plan(c, c, false, n)), maxBytes);
    if (cap >= 0) {
      return write(d, new Plan(cap, cap, false, n));
    }
    int messageBytes = Utf8Text.length(d.message());
    cap = largestFitting(MIN_MESSAGE_CAP, Math.max(MIN_MESSAGE_CAP, Math.min(messageBytes, maxBytes)),
        c -> write(d, new Plan(c, 0, true, n)), maxBytes);
    if (cap >= 0) {
      return write(d, new Plan(cap, 0, true, n));
    }
    int kept = largestFitting(0, n, k -> write(d, new Plan(MIN_MESSAGE_CAP, 0, true, k)), maxBytes);
    if (kept < 0) {
      // Unreachable with validated codes and enum-bounded fields; a defect if it happens.
      throw new IllegalStateException("diagnostic envelope exceeds " + maxBytes + " bytes");
    }
    return write(d, new Plan(MIN_MESSAGE_CAP, 0, true, kept));
  }

  private interface Writer {
    byte[] write(int cap);
  }

  /** Largest value in [lo, hi] whose output fits, or -1; output size is monotone in the value. */
  private static int largestFitting(int lo, int hi, Writer writer, int maxBytes) {
    if (writer.write(lo).length > maxBytes) {
      return -1;
    }
    while (lo < hi) {
      int mid = lo + (hi - lo + 1) / 2;
      if (writer.write(mid).length <= maxBytes) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  private static int longestText(Diagnostic d) {
    int longest = Utf8Text.length(d.message());
    for (Fact f : d.facts()) {
      if (f.kind().shortenable()) {
        longest = Math.max(longest, Utf8Text.length(f.value()));
      }
      if (f.location() != null && f.location().path() != null) {
        longest = Math.max(longest, Utf8Text.length(f.location().path()));
      }
    }
    return Math.max(longest, MIN_TEXT_CAP);
  }

  /** {@code s} cut to {@code cap} bytes including the marker, or null when it already fits. */
  private static String cut(String s, int cap) {
    if (cap == UNLIMITED || !Utf8Text.exceeds(s, cap)) {
      return null;
    }
    String marker = GrpcMessage.TRUNCATION_MARKER;
    return Utf8Text.prefix(s, Math.max(0, cap - marker.length())) + marker;
  }

  private static byte[] write(Diagnostic d, Plan plan) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(1024);
    try (JsonGenerator g = JSON.createGenerator(out, JsonEncoding.UTF8)) {
      boolean truncated = false;
      g.writeStartObject();
      g.writeStringField("contract", Diagnostic.CONTRACT);
      g.writeStringField("code", d.code());
      g.writeStringField("status", d.status());
      g.writeStringField("cause", d.cause().name());
      String message = cut(d.message(), plan.messageCap);
      g.writeStringField("message", message == null ? d.message() : message);
      if (message != null) {
        g.writeBooleanField("message_truncated", true);
        truncated = true;
      }
      g.writeStringField("outcome", d.outcome().wireName());
      if (d.stage() != null) {
        g.writeStringField("stage", d.stage().wireName());
      }
      writeIdentity(g, d.identity());
      g.writeArrayFieldStart("facts");
      for (int i = 0; i < plan.keptFacts; i++) {
        truncated |= writeFact(g, d.facts().get(i), plan);
      }
      g.writeEndArray();
      int omitted = d.facts().size() - plan.keptFacts;
      if (omitted > 0) {
        g.writeNumberField("facts_omitted", omitted);
        truncated = true;
      }
      g.writeArrayFieldStart("actions");
      for (Action a : d.actions()) {
        g.writeString(a.wireName());
      }
      g.writeEndArray();
      g.writeBooleanField("truncated", truncated);
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  private static void writeIdentity(JsonGenerator g, Identity id) throws IOException {
    g.writeObjectFieldStart("identity");
    writeUnsigned(g, "namespace", id.namespace());
    writeUnsigned(g, "correlation", id.correlation());
    writeUnsigned(g, "first_sequence", id.firstSequence());
    writeUnsigned(g, "native_sequence", id.nativeSequence());
    g.writeEndObject();
  }

  private static void writeUnsigned(JsonGenerator g, String name, Long bits) throws IOException {
    if (bits != null) {
      g.writeStringField(name, Long.toUnsignedString(bits));
    }
  }

  /** Writes one fact; returns whether anything in it was shortened. */
  private static boolean writeFact(JsonGenerator g, Fact f, Plan plan) throws IOException {
    boolean truncated = false;
    g.writeStartObject();
    g.writeStringField("name", f.name());
    g.writeStringField("kind", f.kind().wireName());
    if (!f.kind().shortenable()) {
      g.writeStringField("value", f.value());
    } else if (plan.textUnavailable) {
      g.writeBooleanField("unavailable", true);
      truncated = true;
    } else {
      String cutValue = cut(f.value(), plan.textCap);
      g.writeStringField("value", cutValue == null ? f.value() : cutValue);
      if (cutValue != null) {
        g.writeBooleanField("truncated", true);
        truncated = true;
      }
    }
    Location l = f.location();
    if (l != null) {
      g.writeObjectFieldStart("location");
      if (l.path() != null) {
        if (plan.textUnavailable) {
          g.writeBooleanField("path_unavailable", true);
          truncated = true;
        } else {
          String cutPath = cut(l.path(), plan.textCap);
          g.writeStringField("path", cutPath == null ? l.path() : cutPath);
          if (cutPath != null) {
            g.writeBooleanField("path_truncated", true);
            truncated = true;
          }
        }
      }
      writeInt(g, "line", l.line());
      writeInt(g, "column", l.column());
      writeInt(g, "offset", l.offset());
      writeInt(g, "length", l.length());
      g.writeEndObject();
    }
    g.writeEndObject();
    return truncated;
  }

  private static void writeInt(JsonGenerator g, String name, Integer value) throws IOException {
    if (value != null) {
      g.writeNumberField(name, value);
    }
  }
}
