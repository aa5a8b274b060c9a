package io.transit.flight.diagnostic;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Diagnostics to encode: seeded random ones with up to 100 KB of raw UTF-8 text (for {@link
 * DiagnosticPropertyTest}) and, for every {@link Cause}, shapes that reach each shortening step
 * and each mapper rule. {@link #main} prints the encoder's output for all of them, one JSON
 * document per line, so integration-tests/python/test_diagnostic_schema.py can validate exactly
 * what the encoder emits against docs/diagnostic-v1.schema.json (no JSON Schema validator is
 * available to the Maven build). Single-threaded; the generator is deterministic per seed.
 */
final class DiagnosticSamples {
  /** Upper bound of the raw text (message, fact values, location paths) of one generated case. */
  static final int MAX_RAW_BYTES = 100 * 1024;

  private static final String[] CODES = {
    "query.namespace_conflict", "query.sequence_gap", "admission.busy", "ticket.expired",
    "flight.integer_out_of_range", "query.budget_exhausted", "a.b", "x" + ".y".repeat(31)
  };

  private DiagnosticSamples() {}

  /**
   * One generated diagnostic. Every 25th case uses the whole 100 KB; the others a random share.
   * The message takes at most half the budget and the facts the rest, so the raw text never
   * exceeds {@link #MAX_RAW_BYTES}.
   */
  static Diagnostic generate(Random r, int index) {
    boolean full = index % 25 == 0;
    int budget = full ? MAX_RAW_BYTES : 1 + r.nextInt(MAX_RAW_BYTES);
    boolean bigText = full || r.nextInt(3) == 0;
    String message = text(r, full ? budget / 2 : bigText ? r.nextInt(budget / 2 + 1) : r.nextInt(200));
    int factCount = full ? 40 : switch (r.nextInt(6)) {
      case 0 -> 0;
      case 1 -> 300 + r.nextInt(2000); // many facts: numbers up to what the bound holds, then text
      default -> r.nextInt(40);
    };
    boolean numericFlood = factCount >= 300;
    // A flood's exact facts stop where the exact part would no longer fit; the rest is text.
    boolean exactFull = false;
    int valueShare = Math.max(1, budget / 120);
    int pathShare = Math.max(1, budget / 240);
    List<Fact> facts = new ArrayList<>();
    for (int i = 0; i < factCount; i++) {
      String name = "f" + i + (r.nextBoolean() ? "" : ".x_" + r.nextInt(1000));
      int kind = numericFlood ? (exactFull ? 3 + r.nextInt(3) : r.nextInt(2))
          : full ? 3 + r.nextInt(3) : r.nextInt(6);
      int valueBytes = numericFlood ? r.nextInt(Math.max(1, budget / (2 * factCount)))
          : full ? valueShare : bigText ? r.nextInt(valueShare) : r.nextInt(60);
      Fact f = switch (kind) {
        case 0 -> Fact.unsigned(name, r.nextLong());
        case 1 -> Fact.signed(name, r.nextLong());
        case 2 -> {
          byte[] digest = new byte[1 + r.nextInt(64)];
          r.nextBytes(digest);
          yield Fact.digest(name, digest);
        }
        case 3 -> Fact.path(name, text(r, valueBytes));
        default -> Fact.text(name, text(r, valueBytes));
      };
      if (full || r.nextInt(3) == 0) {
        // Flood facts point at coordinates only: their paths would exceed the text budget.
        String path = numericFlood || !full && r.nextBoolean() ? null
            : text(r, full ? pathShare : bigText ? r.nextInt(pathShare) : 20);
        f = f.at(new Location(path, r.nextInt(1000), r.nextInt(1000), r.nextInt(Integer.MAX_VALUE),
            r.nextBoolean() ? null : r.nextInt(100)));
      }
      facts.add(f);
      if (numericFlood && !exactFull && !f.kind().shortenable()
          && DiagnosticEncoder.exactBytes(new Diagnostic("a.b", Cause.INTERNAL, "", Outcome.UNKNOWN,
              null, Identity.NONE, facts, List.of())) > Diagnostic.MAX_BYTES - 1500) {
        exactFull = true; // leave room for the largest envelope, witness, basis and budgets
      }
    }
    Cause cause = Cause.values()[r.nextInt(Cause.values().length)];
    Identity identity = new Identity(
        r.nextBoolean() ? r.nextLong() : null, r.nextBoolean() ? -1L : null,
        r.nextBoolean() ? r.nextLong() : null, r.nextBoolean() ? Long.MIN_VALUE : null);
    List<Action> actions = new ArrayList<>(Recovery.actions(cause));
    for (int i = r.nextInt(12); i > 0; i--) {
      actions.add(Action.values()[r.nextInt(Action.values().length)]);
    }
    Stage stage = r.nextBoolean() ? null : Stage.values()[r.nextInt(Stage.values().length)];
    Outcome outcome = Outcome.values()[r.nextInt(Outcome.values().length)];
    boolean shared = r.nextBoolean();
    return new Diagnostic(CODES[index % CODES.length], cause, message, outcome, stage, identity,
        facts, actions, r.nextInt(4) == 0, shared ? witness(r) : null, shared ? basis(r) : null,
        shared ? budgets(r) : List.of());
  }

  /** A witness of a random source with every optional part present or not. */
  static Witness witness(Random r) {
    Witness.Source source = Witness.Source.values()[r.nextInt(Witness.Source.values().length)];
    byte[] sha = new byte[32];
    r.nextBytes(sha);
    return new Witness(source, r.nextBoolean() ? null : Stage.values()[r.nextInt(8)],
        r.nextBoolean() ? null : CODES[r.nextInt(CODES.length)],
        r.nextBoolean() ? r.nextLong() : null, r.nextBoolean() ? -1L : null,
        r.nextBoolean() ? null : java.util.HexFormat.of().formatHex(sha));
  }

  static Basis basis(Random r) {
    byte[] sha = new byte[32];
    r.nextBytes(sha);
    return Basis.of(sha, "transit-embedded", r.nextBoolean() ? "0.1.0-SNAPSHOT" : "unpackaged");
  }

  static List<Budget> budgets(Random r) {
    List<Budget> out = new ArrayList<>();
    for (int i = r.nextInt(4); i > 0; i--) {
      out.add(new Budget("max_result_bytes", r.nextLong(), r.nextBoolean() ? -1L : null));
    }
    return out;
  }

  /**
   * At most {@code maxBytes} UTF-8 bytes (a lone surrogate counts as the 3 bytes of U+FFFD it
   * becomes) mixing ASCII, JSON specials, controls, CJK, emoji and lone surrogates.
   */
  static String text(Random r, int maxBytes) {
    StringBuilder sb = new StringBuilder();
    int bytes = 0;
    while (true) {
      String piece = switch (r.nextInt(10)) {
        case 0 -> String.valueOf((char) r.nextInt(0x20));
        case 1 -> "\"\\/";
        case 2 -> String.valueOf((char) (0x4E00 + r.nextInt(0x5000)));
        case 3 -> new String(Character.toChars(0x1F300 + r.nextInt(0x300)));
        case 4 -> String.valueOf(r.nextBoolean() ? '\uD83D' : '\uDC00');
        case 5 -> String.valueOf((char) (0x80 + r.nextInt(0x700)));
        default -> String.valueOf((char) (0x20 + r.nextInt(0x5F)));
      };
      int w = Utf8Text.length(Utf8Text.wellFormed(piece));
      if (bytes + w > maxBytes) {
        return sb.toString();
      }
      sb.append(piece);
      bytes += w;
    }
  }

  /** Raw UTF-8 bytes of a diagnostic's text: message, text/path values, location paths. */
  static int rawBytes(Diagnostic d) {
    int n = Utf8Text.length(d.message());
    for (Fact f : d.facts()) {
      n += f.kind().shortenable() ? Utf8Text.length(f.value()) : 0;
      n += f.location() != null && f.location().path() != null ? Utf8Text.length(f.location().path()) : 0;
    }
    return n;
  }

  /**
   * For every cause: the envelope alone, every field and fact kind at its widest, and the same
   * grown until shortening steps 1, 2 and 3 apply (step 3 with as many number facts as the
   * bound holds, exactly at the limit).
   */
  static List<Diagnostic> perCause() {
    List<Diagnostic> out = new ArrayList<>();
    Identity max = new Identity(-1L, -1L, -1L, -1L);
    for (Cause c : Cause.values()) {
      String code = "sample." + c.name().toLowerCase();
      List<Fact> every = List.of(
          Fact.unsigned("u64", -1L), Fact.signed("i64", Long.MIN_VALUE),
          Fact.number("wide", new java.math.BigInteger("-" + "9".repeat(40))),
          Fact.digest("sha256", new byte[32]), Fact.text("empty", ""),
          Fact.text("identifier", "amount \u2603 \"q\" 100%")
              .at(Location.inStatement(1, 8, 7, 6)),
          Fact.path("file", "demo-data/x.parquet").at(Location.path("p")),
          Fact.text("where", "").at(new Location(null, 0, 0, 0, 0)));
      out.add(new Diagnostic(code, c, "", Recovery.outcome(c), null, Identity.NONE, List.of(),
          List.of()));
      for (Stage s : Stage.values()) {
        out.add(new Diagnostic(code, c, "m", Recovery.outcome(c), s, max, every,
            Recovery.actions(c)));
      }
      String big = "\u00e9%".repeat(3000);
      List<Fact> step1 = new ArrayList<>(every);
      step1.add(Fact.text("big", big).at(new Location(big, 1, 1, 0, 6000)));
      out.add(new Diagnostic(code, c, big, Outcome.UNKNOWN, Stage.EXECUTION, max, step1,
          List.of(Action.values())));
      List<Fact> step2 = new ArrayList<>(every);
      for (int i = 0; i < 120; i++) {
        step2.add(Fact.path("p" + i, "x".repeat(200)).at(new Location("y".repeat(100), i, i, i, i)));
      }
      out.add(new Diagnostic(code, c, big, Outcome.FAILED, Stage.OUTPUT, max, step2,
          Recovery.actions(c)));
      // Step 3: text facts between and after as many u64 facts as the bound holds; every
      // number stays, text facts go from the end.
      List<Fact> step4 = new ArrayList<>(every);
      for (int i = 0; i < 400; i++) {
        step4.add(Fact.text("t" + i, "z".repeat(60)).at(new Location("q", i, i, i, i)));
      }
      Witness witness = new Witness(Witness.Source.NATIVE_REJECTION, Stage.ADMISSION,
          "query.source_unavailable", -1L, null, "ab".repeat(32));
      Basis basis = Basis.of(new byte[32], "transit-embedded", "0.1.0-SNAPSHOT");
      List<Budget> budgets = List.of(new Budget("max_result_bytes", -1L, -2L));
      for (int i = 0; ; i++) {
        List<Fact> more = new ArrayList<>(step4);
        more.add(3 + i % 7, Fact.unsigned("n" + i, -1L - i));
        Diagnostic next = new Diagnostic(code, c, big, Outcome.INCOMPLETE, Stage.RETRIEVAL, max,
            more, List.of(Action.values()), true, witness, basis, budgets);
        if (DiagnosticEncoder.exactBytes(next) > Diagnostic.MAX_BYTES) {
          break;
        }
        step4 = more;
      }
      out.add(new Diagnostic(code, c, big, Outcome.INCOMPLETE, Stage.RETRIEVAL, max, step4,
          List.of(Action.values()), true, witness, basis, budgets));
    }
    return out;
  }

  /**
   * What {@link ErrorMapper} sends for every cause (access classes without disclosure), and its
   * last resort's two trailers.
   */
  static List<byte[]> mapped() {
    ErrorMapper mapper = new ErrorMapper();
    List<byte[]> out = new ArrayList<>();
    for (Cause c : Cause.values()) {
      GatewayException e = GatewayException.of(c, "sample." + c.name().toLowerCase(), "used 100%")
          .with(Fact.unsigned("limit", -1L)).with("column", "b\u00e9")
          .with(Fact.cutText("literal", "'abc..."))
          .withIdentity(new Identity(7L, 9L, 7L, 10L)).at(Stage.ADMISSION)
          .withMessageCut()
          .withWitness(Witness.nativeFailure("query.budget_exhausted", "execution", 9L))
          .withBasis(Basis.of(new byte[32], "transit-embedded", "0.1.0"))
          .withBudget(new Budget("max_result_rows", 10L, 11L));
      byte[] bytes = mapper.diagnosticBytes(e);
      if (bytes != null) {
        out.add(bytes);
      }
    }
    for (boolean incomplete : new boolean[] {false, true}) {
      out.add(ErrorMapper.lastResort(incomplete).getTrailers().get(ErrorMapper.TRAILER));
    }
    return out;
  }

  /** Prints every sample's encoding, one JSON document per line (Jackson escapes newlines). */
  public static void main(String[] args) throws IOException {
    int generated = args.length > 0 ? Integer.parseInt(args[0]) : 600;
    OutputStream raw = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    List<byte[]> docs = new ArrayList<>(mapped());
    for (Diagnostic d : perCause()) {
      docs.add(d.toJson());
    }
    Random random = new Random(0x5C4E_3A11L);
    for (int i = 0; i < generated; i++) {
      docs.add(generate(random, i).toJson());
    }
    for (byte[] doc : docs) {
      raw.write(doc);
      raw.write('\n');
    }
    raw.flush();
  }
}
