package io.transit.flight.server.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.nativequery.embedded.DemoData;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.server.config.StateDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

/**
 * First-run set-up of the demo deployment: generates the demo Tables' data files under the state
 * directory and writes a configuration that publishes each to its own demo caller. Existing files
 * are left alone, so a restart serves the same data, journal and tickets.
 */
public final class DemoSetup {
  public static final String CONFIG = "gateway.json";

  private DemoSetup() {}

  /** Returns the demo configuration file in {@code stateDir}, creating everything on first run. */
  public static Path ensure(Path stateDir, int port) throws IOException {
    Files.createDirectories(stateDir);
    Files.setPosixFilePermissions(stateDir, PosixFilePermissions.fromString("rwx------"));
    Path config = stateDir.resolve(CONFIG);
    if (Files.exists(config)) {
      return config;
    }
    Path data = stateDir.resolve("demo-data");
    Files.createDirectories(data);
    List<Publication> pubs;
    try {
      pubs = DemoData.generate(data);
    } catch (java.sql.SQLException e) {
      throw new IOException("demo data generation failed: " + e.getMessage(), e);
    }
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = mapper.createObjectNode();
    root.putObject("listen").put("host", "127.0.0.1").put("port", port);
    root.put("state_dir", ".");
    root.putObject("deployment").put("realm", 1).put("realm_name", "demo").put("service", 7)
        .put("ingress", 1).put("ticket_ttl_ms", 3_600_000);
    ArrayNode publications = root.putArray("publications");
    ArrayNode callers = root.putArray("callers");
    long principal = 101;
    for (Publication p : pubs) {
      // Republished under short names, each on a source of its own, so every demo caller's
      // rights cover exactly its own Table.
      String name = p.declaration().getTable().replaceFirst("^demo_", "");
      TableDeclaration d = p.declaration().toBuilder()
          .setTable(name)
          .setSource(100 + p.declaration().getObjectId())
          .build();
      ObjectNode pub = publications.addObject();
      pub.put("name", name).put("catalog", d.getCatalog()).put("schema", d.getDbSchema())
          .put("table", d.getTable()).put("owner", d.getOwner()).put("object_id", d.getObjectId())
          .put("source", d.getSource()).put("metadata_ref", d.getMetadataRef())
          .put("format", p.format());
      ArrayNode files = pub.putArray("files");
      for (Path f : p.files()) {
        files.add(stateDir.toAbsolutePath().relativize(f.toAbsolutePath()).toString());
      }
      ArrayNode cols = pub.putArray("columns");
      for (ColumnDeclaration c : d.getColumnsList()) {
        cols.addObject().put("name", c.getName()).put("type", c.getLogicalType())
            .put("nullable", c.getNullable());
      }
      String caller = name;
      callers.addObject().put("name", caller)
          .put("credential_file", "credentials/" + caller + ".token")
          .put("principal", principal)
          .put("principal_key_file", "keys/principal-" + principal + ".key")
          .put("credential_epoch", 1).put("binding_revision", 1).put("requests", principal)
          .put("publication", name);
      principal++;
    }
    StateDirectory.replaceDurably(config, mapper.writeValueAsBytes(root),
        PosixFilePermissions.fromString("rw-r--r--"));
    return config;
  }
}
