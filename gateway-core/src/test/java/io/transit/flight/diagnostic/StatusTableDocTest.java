package io.transit.flight.diagnostic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** Keeps docs/status.md and docs/diagnostic-v1.schema.json equal to the code. */
class StatusTableDocTest {
  private static final Path DOCS = Path.of("..", "docs");

  /** Cause name → cells of its row in the "## Status table" section, backticks removed. */
  private static Map<String, List<String>> statusRows() throws Exception {
    Map<String, List<String>> rows = new LinkedHashMap<>();
    boolean inTable = false;
    for (String line : Files.readAllLines(DOCS.resolve("status.md"))) {
      if (line.startsWith("## ")) {
        inTable = line.equals("## Status table");
        continue;
      }
      if (!inTable || !line.startsWith("| `")) {
        continue;
      }
      List<String> cells = new ArrayList<>();
      for (String cell : line.substring(1, line.length() - 1).split("\\|")) {
        cells.add(cell.trim().replace("`", ""));
      }
      assertEquals(6, cells.size(), line);
      assertTrue(rows.put(cells.get(0), cells) == null, "duplicate row " + cells.get(0));
    }
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
      assertTrue(row.get(3).matches("[a-z][a-z0-9_]*(\\.[a-z0-9_]+)+"), row.get(3));
      assertEquals(Recovery.actions(cause).stream().map(Action::wireName).toList(),
          List.of(row.get(4).split(",\\s*")), cause.name());
      assertEquals(Recovery.outcome(cause).wireName(), row.get(5), cause.name());
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
