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
 *   <li>as 3 with the message at {@link #MIN_MESSAGE_CAP}, keeping every number and digest fact
 *       and the longest prefix of the text/path facts that fits; the text/path facts left out are
 *       counted in {@code facts_omitted}.
 * </ol>
 *
 * Code, status, cause, outcome, stage, identity, witness, basis, budgets, number and digest facts,
 * location coordinates of kept facts and actions are never altered or dropped. A diagnostic
 * whose exact part alone (step 4 with no text/path fact) exceeds the bound is refused with
 * {@code IllegalArgumentException}: no gateway failure carries that many exact facts, so it is a
 * defect of the code that built it, and {@link ErrorMapper} then sends the status without the
 * trailer. Each step is monotone in its cap, so a binary search finds the largest cap that fits.
 * Text cut before encoding ({@link Fact#cut()}, {@link Diagnostic#messageCut()}) is flagged
 * like text the encoder cuts. Stateless; any thread.
 */
final class DiagnosticEncoder {
  /** Smallest common cap step 2 uses before giving up on keeping text. */
  static final int MIN_TEXT_CAP = 48;

  /** Smallest message cap, used at step 4. */
  static final int MIN_MESSAGE_CAP = 32;

  /** Smallest bound accepted: the largest envelope without facts is well below it. */
  static final int MIN_BOUND = 1024;

  private static final JsonFactory JSON = new JsonFactory();
  private static final int UNLIMITED = Integer.MAX_VALUE;

  /**
   * How much of a diagnostic to write: caps for the message and text, whether text is
   * unavailable, and how many text/path facts (in order) are kept; exact facts are always kept.
   */
  private record Plan(int messageCap, int textCap, boolean textUnavailable, int keptTextFacts) {}

  private DiagnosticEncoder() {}

  static byte[] encode(Diagnostic d, int maxBytes) {
    if (maxBytes < MIN_BOUND) {
      throw new IllegalArgumentException("maxBytes: " + maxBytes + " (expected: >= " + MIN_BOUND + ")");
    }
    int n = textFacts(d);
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
      throw new IllegalArgumentException("diagnostic " + d.code() + ": its exact part alone takes "
          + exactBytes(d) + " bytes (expected: at most " + maxBytes + ")");
    }
    return write(d, new Plan(MIN_MESSAGE_CAP, 0, true, kept));
  }

  /**
   * Bytes of the smallest form shortening can reach: the message at {@link #MIN_MESSAGE_CAP},
   * no text/path fact, every exact part. At most {@link Diagnostic#MAX_BYTES} for any diagnostic
   * that can be sent.
   */
  static int exactBytes(Diagnostic d) {
    return write(d, new Plan(MIN_MESSAGE_CAP, 0, true, 0)).length;
  }

  private static int textFacts(Diagnostic d) {
    int n = 0;
    for (Fact f : d.facts()) {
      n += f.kind().shortenable() ? 1 : 0;
    }
    return n;
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
      if (message != null || d.messageCut()) {
        g.writeBooleanField("message_truncated", true);
        truncated = true;
      }
      g.writeStringField("outcome", d.outcome().wireName());
      if (d.stage() != null) {
        g.writeStringField("stage", d.stage().wireName());
      }
      writeIdentity(g, d.identity());
      writeWitness(g, d.witness());
      writeBasis(g, d.basis());
      writeBudgets(g, d.budgets());
      g.writeArrayFieldStart("facts");
      int textSeen = 0;
      int omitted = 0;
      for (Fact f : d.facts()) {
        if (f.kind().shortenable() && textSeen++ >= plan.keptTextFacts) {
          omitted++;
          continue;
        }
        truncated |= writeFact(g, f, plan);
      }
      g.writeEndArray();
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

  private static void writeWitness(JsonGenerator g, Witness w) throws IOException {
    if (w == null) {
      return;
    }
    g.writeObjectFieldStart("witness");
    g.writeStringField("source", w.source().wireName());
    if (w.stage() != null) {
      g.writeStringField("stage", w.stage().wireName());
    }
    if (w.code() != null) {
      g.writeStringField("code", w.code());
    }
    writeUnsigned(g, "native_sequence", w.nativeSequence());
    writeUnsigned(g, "correlation", w.correlation());
    if (w.commandSha256() != null) {
      g.writeStringField("command_sha256", w.commandSha256());
    }
    g.writeEndObject();
  }

  private static void writeBasis(JsonGenerator g, Basis b) throws IOException {
    if (b == null) {
      return;
    }
    g.writeObjectFieldStart("basis");
    g.writeStringField("declaration_sha256", b.declarationSha256());
    g.writeStringField("engine", b.engine());
    g.writeStringField("engine_version", b.engineVersion());
    g.writeEndObject();
  }

  private static void writeBudgets(JsonGenerator g, java.util.List<Budget> budgets)
      throws IOException {
    if (budgets.isEmpty()) {
      return;
    }
    g.writeArrayFieldStart("budgets");
    for (Budget b : budgets) {
      g.writeStartObject();
      g.writeStringField("name", b.name());
      writeUnsigned(g, "limit", b.limit());
      writeUnsigned(g, "required", b.required());
      g.writeEndObject();
    }
    g.writeEndArray();
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
      if (cutValue != null || f.cut()) {
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
