package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Keeps docs/status.md and docs/diagnostic-v1.schema.json equal to the code, including the list
 * of every code the main sources send (read from their text: codes are string literals).
 */
class StatusTableDocTest {
  private static final Path DOCS = Path.of("..", "docs");
  private static final String APPENDIX = "## Every code the gateway sends";

  /**
   * A string literal of one of these families in main sources is a code the gateway sends (two
   * file names excepted). A family a {@code Cause.X, "code"} call uses but this list lacks fails
   * {@link #everyCodeTheSourcesSendIsInTheAppendixAndNoOther}.
   */
  private static final Pattern CODE_LITERAL = Pattern.compile(
      "\"((?:access|admission|auth|catalog|flight|gateway|query|rights|sequence|ticket|transport)"
          + "\\.[a-z0-9_]+)\"");
  private static final Pattern CAUSE_THEN_CODE =
      Pattern.compile("Cause\\.([A-Z_]+),\\s*\"([a-z0-9_]+\\.[a-z0-9_.]+)\"");
  /** File names. */
  private static final Set<String> NOT_CODES = Set.of("gateway.json", "gateway.lock");
  /** No literal holds these: {@code Authorization.current} builds "access." + right + "_revoked". */
  private static final Set<String> BUILT =
      Set.of("access.send_revoked", "access.inspect_revoked", "access.read_revoked");

  /** Cause name → cells of its row in the "## Status table" section, backticks removed. */
  private static Map<String, List<String>> statusRows() throws Exception {
    return rows("## Status table", 6);
  }

  /** First cell → cells of each row of the table in {@code section}, backticks removed. */
  private static Map<String, List<String>> rows(String section, int width) throws Exception {
    Map<String, List<String>> rows = new LinkedHashMap<>();
    boolean inTable = false;
    for (String line : Files.readAllLines(DOCS.resolve("status.md"))) {
      if (line.startsWith("## ")) {
        inTable = line.equals(section);
        continue;
      }
      if (!inTable || !line.startsWith("| `")) {
        continue;
      }
      List<String> cells = new ArrayList<>();
      for (String cell : line.substring(1, line.length() - 1).split("\\|")) {
        cells.add(cell.trim().replace("`", ""));
      }
      assertEquals(width, cells.size(), line);
      assertTrue(rows.put(cells.get(0), cells) == null, "duplicate row " + cells.get(0));
    }
    assertFalse(rows.isEmpty(), "no table under " + section);
    return rows;
  }

  @Test
  void statusTableListsExactlyTheCausesWithTheirStatus() throws Exception {
    Map<String, List<String>> rows = statusRows();
    assertEquals(Arrays.stream(Cause.values()).map(Enum::name).toList(), List.copyOf(rows.keySet()),
        "one row per Cause, in enum order");
    for (Cause cause : Cause.values()) {
      List<String> row = rows.get(cause.name());
      assertEquals(cause.code().name(), row.get(1), cause.name());
      assertEquals(cause.meaning(), row.get(2), cause.name());
      assertEquals(Recovery.actions(cause).stream().map(Action::wireName).toList(),
          List.of(row.get(4).split(",\\s*")), cause.name());
      assertEquals(Recovery.outcome(cause).wireName(), row.get(5), cause.name());
    }
  }

  /** Every main source file of every module, as text. */
  private static List<String> mainSources() throws Exception {
    List<String> texts = new ArrayList<>();
    try (Stream<Path> modules = Files.list(Path.of(".."))) {
      for (Path main : modules.map(m -> m.resolve("src/main/java")).filter(Files::isDirectory)
          .toList()) {
        try (Stream<Path> files = Files.walk(main)) {
          for (Path f : files.filter(f -> f.toString().endsWith(".java")).toList()) {
            texts.add(Files.readString(f));
          }
        }
      }
    }
    assertTrue(texts.size() > 100, "main sources not found from " + Path.of("").toAbsolutePath());
    return texts;
  }

  /** The codes the sources send; the cause of each whose call (or QueryCode) names both. */
  private record Sent(Set<String> codes, Map<String, Set<String>> causes) {}

  private static Sent sent() throws Exception {
    Set<String> codes = new TreeSet<>(BUILT);
    Map<String, Set<String>> causes = new HashMap<>();
    for (String text : mainSources()) {
      Matcher m = CODE_LITERAL.matcher(text);
      while (m.find()) {
        codes.add(m.group(1));
      }
      Matcher c = CAUSE_THEN_CODE.matcher(text);
      while (c.find()) {
        causes.computeIfAbsent(c.group(2), k -> new TreeSet<>()).add(c.group(1));
      }
      if (text.contains("\"access.\" + r.name + \"_revoked\"")) {
        for (String built : BUILT) {
          String right = built.substring("access.".length(), built.indexOf("_revoked"));
          if (text.contains("(\"" + right + "\")")) {
            causes.computeIfAbsent(built, k -> new TreeSet<>()).add(Cause.ACCESS_DENIED.name());
          }
        }
      }
    }
    codes.removeAll(NOT_CODES);
    for (QueryCode q : QueryCode.values()) {
      causes.computeIfAbsent(q.code(), k -> new TreeSet<>()).add(q.cause().name());
    }
    assertTrue(codes.containsAll(causes.keySet()), "codes outside CODE_LITERAL's families: "
        + causes.keySet().stream().filter(k -> !codes.contains(k)).toList());
    for (String built : BUILT) {
      assertEquals(Set.of(Cause.ACCESS_DENIED.name()), causes.get(built),
          built + ": Authorization.current no longer builds it");
    }
    return new Sent(codes, causes);
  }

  @Test
  void everyCodeTheSourcesSendIsInTheAppendixAndNoOther() throws Exception {
    Sent sent = sent();
    Map<String, List<String>> appendix = rows(APPENDIX, 5);
    Set<String> listed = new TreeSet<>(appendix.keySet());
    List<String> missing = sent.codes().stream().filter(c -> !listed.contains(c)).toList();
    List<String> gone = listed.stream().filter(c -> !sent.codes().contains(c)).toList();
    assertTrue(missing.isEmpty() && gone.isEmpty(),
        "missing from docs/status.md: " + missing + "; no longer in the code: " + gone);
    assertEquals(List.copyOf(listed), List.copyOf(appendix.keySet()), "appendix sorted by code");
    Set<String> outcomes = new TreeSet<>(
        Arrays.stream(Outcome.values()).map(Outcome::wireName).toList());
    for (List<String> row : appendix.values()) {
      Cause cause = Cause.valueOf(row.get(2));
      assertEquals(cause.code().name(), row.get(1), row.get(0));
      Set<String> raisedWith = sent.causes().get(row.get(0));
      if (raisedWith != null) {
        assertEquals(Set.of(cause.name()), raisedWith, row.get(0));
      }
      for (String outcome : row.get(3).split(",\\s*")) {
        assertTrue(outcomes.contains(outcome), row.get(0) + ": outcome " + outcome);
      }
    }
  }

  @Test
  void everyExampleCodeIsSentWithItsRowsCause() throws Exception {
    Sent sent = sent();
    Map<String, List<String>> appendix = rows(APPENDIX, 5);
    for (List<String> row : statusRows().values()) {
      String example = row.get(3);
      assertTrue(sent.codes().contains(example), row.get(0) + ": " + example + " is never sent");
      assertEquals(row.get(0), appendix.get(example).get(2), example);
    }
  }

  @Test
  void queryCodesUseTheCauseTheirRowsName() throws Exception {
    Map<String, List<String>> rows = statusRows();
    for (QueryCode q : QueryCode.values()) {
      assertTrue(rows.containsKey(q.cause().name()), q.name());
    }
  }

  @Test
  void schemaEnumsMatchTheCode() throws Exception {
    JsonNode schema = new ObjectMapper().readTree(DOCS.resolve("diagnostic-v1.schema.json").toFile());
    JsonNode p = schema.get("properties");
    assertEquals(Diagnostic.CONTRACT, p.get("contract").get("const").asText());
    assertEquals(names(Cause.values()), texts(p.get("cause").get("enum")));
    assertEquals(names(io.grpc.Status.Code.values()).stream().filter(s -> !s.equals("OK")).toList(),
        texts(p.get("status").get("enum")));
    assertEquals(Arrays.stream(Outcome.values()).map(Outcome::wireName).toList(),
        texts(p.get("outcome").get("enum")));
    assertEquals(Arrays.stream(Stage.values()).map(Stage::wireName).toList(),
        texts(p.get("stage").get("enum")));
    assertEquals(Arrays.stream(Action.values()).map(Action::wireName).toList(),
        texts(p.get("actions").get("items").get("enum")));
    assertEquals(Arrays.stream(Fact.Kind.values()).map(Fact.Kind::wireName).toList(),
        texts(schema.get("$defs").get("fact").get("properties").get("kind").get("enum")));
    // Every top-level field the encoder can write is declared (additionalProperties is false).
    assertEquals(new TreeSet<>(List.of("contract", "code", "status", "cause", "message",
            "message_truncated", "outcome", "stage", "identity", "witness", "basis", "budgets",
            "facts", "facts_omitted", "actions", "truncated")),
        new TreeSet<>(texts(p.fieldNames())));
    assertEquals(Arrays.stream(Witness.Source.values()).map(Witness.Source::wireName).toList(),
        texts(p.get("witness").get("properties").get("source").get("enum")));
    assertEquals(Arrays.stream(Stage.values()).map(Stage::wireName).toList(),
        texts(p.get("witness").get("properties").get("stage").get("enum")));
  }

  private static List<String> names(Enum<?>[] values) {
    return Arrays.stream(values).map(Enum::name).toList();
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  private static List<String> texts(java.util.Iterator<String> it) {
    List<String> out = new ArrayList<>();
    it.forEachRemaining(out::add);
    return out;
  }
}
