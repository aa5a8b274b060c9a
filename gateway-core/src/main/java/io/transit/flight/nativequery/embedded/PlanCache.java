package io.transit.flight.nativequery.embedded;

import io.transit.flight.crypto.DeclarationFingerprint;
import io.transit.flight.diagnostic.Basis;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.diagnostic.Witness;
import io.transit.flight.nativequery.EngineIdentity;
import io.transit.flight.nativequery.Planner;
import io.transit.flight.proto.TableDeclaration;
import io.transit.flight.query.CompileWatch;
import io.transit.flight.query.QueryCompiler;
import io.transit.flight.query.QueryPlan;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The engine's compiler: a bounded cache in front of {@link QueryCompiler#compile}. The engine
 * owns compilation; the gateway asks it through {@link
 * io.transit.flight.nativequery.NativeQueryClient#planner()} (GetSchema, GetFlightInfo), and the
 * engine plans the same statement again when its submit is recorded and when it runs. Parsing
 * dominates each of those, so the statement is parsed once and the later two are cache hits. The key is every input of {@code compile} — the
 * SQL string and the whole {@link TableDeclaration} (a protobuf message: deep equality, immutable)
 * — so a hit returns exactly what compiling again would. {@link QueryPlan} is immutable (records
 * over copied lists, enums and immutable literal values), so one instance is shared by all callers.
 * Failures are not cached: a refused statement compiles (and fails) again.
 *
 * <p>Bounded twice: at most {@code maxEntries} plans and at most {@code maxSqlChars} characters of
 * cached SQL, evicting the least recently used; a statement longer than an eighth of the character
 * budget is compiled but never cached, so one huge statement cannot flush the cache.
 *
 * <p>The compiler's own refusals leave here with the compiler as their original witness and the
 * statement's frozen basis (the declaration's fingerprint and this engine's identity), so they
 * reach the caller however the gateway presents them; a refusal the {@link CompileWatch} gave
 * (the call's timeout, deadline or cancellation) is the gate's, not the compiler's, and passes
 * unchanged.
 *
 * <p>Thread-safe: lookups and insertions take this object's monitor briefly; compilation runs
 * outside it, so two threads missing on the same key may both compile (equal results).
 */
public final class PlanCache implements Planner {
  /** Defaults for the daemon: far above the statements one deployment repeats. */
  public static final int DEFAULT_MAX_ENTRIES = 512;
  public static final int DEFAULT_MAX_SQL_CHARS = 1 << 20;

  private record Key(String sql, TableDeclaration table) {}

  private final EngineIdentity engine;
  private final int maxEntries;
  private final long maxSqlChars;
  private final int maxEntryChars;
  // @GuardedBy("this"); access order, so iteration starts at the least recently used entry.
  private final LinkedHashMap<Key, QueryPlan> plans = new LinkedHashMap<>(16, 0.75f, true);
  // @GuardedBy("this"): characters of SQL held by the keys of plans.
  private long sqlChars;

  public PlanCache(int maxEntries, int maxSqlChars) {
    this(maxEntries, maxSqlChars, EmbeddedEngine.IDENTITY);
  }

  /** As above, compiling as {@code engine} (named in the basis of refusals). */
  public PlanCache(int maxEntries, int maxSqlChars, EngineIdentity engine) {
    this.engine = Objects.requireNonNull(engine, "engine");
    if (maxEntries < 1 || maxSqlChars < 8) {
      throw new IllegalArgumentException("maxEntries " + maxEntries + ", maxSqlChars "
          + maxSqlChars + " (expected: >= 1 and >= 8)");
    }
    this.maxEntries = maxEntries;
    this.maxSqlChars = maxSqlChars;
    this.maxEntryChars = maxSqlChars / 8;
  }

  /** A cache with the daemon defaults. */
  public static PlanCache withDefaults() {
    return new PlanCache(DEFAULT_MAX_ENTRIES, DEFAULT_MAX_SQL_CHARS);
  }

  /** As {@link QueryCompiler#compile}: the same plan, or the same {@code GatewayException}. */
  @Override
  public QueryPlan plan(String sql, TableDeclaration table) {
    return plan(sql, table, CompileWatch.NONE);
  }

  /** As {@link QueryCompiler#compile(String, TableDeclaration, CompileWatch)}, cached. */
  @Override
  public QueryPlan plan(String sql, TableDeclaration table, CompileWatch watch) {
    Objects.requireNonNull(sql, "sql");
    Objects.requireNonNull(table, "table");
    Key key = new Key(sql, table);
    synchronized (this) {
      QueryPlan hit = plans.get(key);
      if (hit != null) {
        return hit;
      }
    }
    QueryPlan plan;
    try {
      plan = QueryCompiler.compile(sql, table, watch);
    } catch (GatewayException e) {
      throw e == watch.failure() ? e : witnessed(e, table);
    }
    if (sql.length() <= maxEntryChars) {
      insert(key, plan);
    }
    return plan;
  }

  /** The compiler's refusal with its witness and the statement's frozen basis. */
  private GatewayException witnessed(GatewayException e, TableDeclaration table) {
    GatewayException out = e.withWitness(Witness.compiler(e.code()));
    byte[] fingerprint;
    try {
      fingerprint = DeclarationFingerprint.of(table);
    } catch (IllegalArgumentException unknownFields) {
      return out; // a declaration no replica can rebuild has no basis to name
    }
    return out.withBasis(Basis.of(fingerprint, engine.name(), engine.version()));
  }

  /** The cached plan of {@code sql} over {@code table}, or null: compiling it costs a parse. */
  @Override
  public synchronized QueryPlan cached(String sql, TableDeclaration table) {
    return plans.get(new Key(sql, table));
  }

  /** Plans currently cached. */
  public synchronized int size() {
    return plans.size();
  }

  private synchronized void insert(Key key, QueryPlan plan) {
    if (plans.putIfAbsent(key, plan) != null) {
      return; // another thread compiled the same statement meanwhile
    }
    sqlChars += key.sql().length();
    Iterator<Map.Entry<Key, QueryPlan>> eldest = plans.entrySet().iterator();
    while (plans.size() > maxEntries || sqlChars > maxSqlChars) {
      Key evicted = eldest.next().getKey();
      eldest.remove();
      sqlChars -= evicted.sql().length();
    }
  }
}
