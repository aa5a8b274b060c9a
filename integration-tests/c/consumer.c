/*
 * transit-adbc-c: an ADBC C consumer of the gateway, driven line by line on stdin.
 *
 * It loads the Flight SQL driver library by path (dlopen + its AdbcDriverFlightsqlInit entry
 * point, ADBC 1.1.0) with no driver manager, so what it exercises is exactly the C API a C
 * program sees. Each input line is one command, fields separated by tabs; each answer is one
 * JSON line on stdout. Keeping one process across commands lets a harness act between them
 * (restart the daemon, revoke a right) while connections and open streams stay alive.
 *
 *   connect H TOKEN                 open a database + connection in slot H (0..7) with the Bearer token
 *   attach H TOKEN                  a connection on the shared pool database, its credential set
 *                                   per connection as the call header "authorization"
 *   next H                          {"next_sequence":N} via the transit.next_sequence session option
 *   query H SEQ SQL [EXPECT]        execute directly at SEQ ("next" reads it first), read every row;
 *                                   EXPECT is the rows as compact JSON, compared byte for byte
 *   open H SEQ SQL                  execute and read only the first batch, keeping the stream open
 *   drain [EXPECT_ROWS]             read the rest of the open stream, counting rows
 *   partitions H SEQ SQL            ExecutePartitions: the partitions (tickets) as hex
 *   readpart H HEX [EXPECT]         ReadPartition and read every row
 *   objects H DEPTH CAT SCHEMA TABLE    GetObjects (empty field = no filter)
 *   tableschema H CAT SCHEMA TABLE  GetTableSchema
 *   tabletypes H                    GetTableTypes
 *   info H CODES                    GetInfo for comma-separated codes (empty = all)
 *   close H                         releases the slot's open stream and its statement first (the
 *                                   answer then says "released_open_stream":true), then the
 *                                   connection and its own database, each even if one before failed
 *
 * Malformed fields are refused with {"ok":false,"where":"usage",...} rather than guessed at: a
 * token longer than the header buffer, odd-length or non-hex partitions, more than 64 info
 * codes or a code that is not a number, a drain EXPECT that is not a number.
 *
 * A failure answers {"ok":false,...} with the ADBC status, sqlstate, vendor code, message and
 * every error detail (the gateway's transit-diagnostic-bin among them). Exit status: 0 at end of
 * input, 2 on bad usage, 3 when a release at the end of input failed (each on standard error).
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adbc.h"
#include "arrow_json.h"

#define SEQUENCE_OPTION "adbc.flight.sql.rpc.call_header.x-transit-request-sequence"
#define NEXT_OPTION "adbc.flight.sql.session.option.transit.next_sequence"
#define AUTH_OPTION "adbc.flight.sql.authorization_header"
#define SLOTS 8
#define MAX_FIELDS 8
#define MAX_INFO_CODES 64

static struct AdbcDriver drv;
static const char* uri;

struct slot {
  int open;
  int owns_db; /* 0: the connection is on the shared pool database */
  struct AdbcDatabase db;
  struct AdbcConnection cn;
};
static struct slot slots[SLOTS];

/* One database without a credential, shared by every `attach`ed connection (a connection pool). */
static struct AdbcDatabase pool_db;
static int pool_open;

/* The one stream `open` leaves for `drain`, with the statement that produced it. */
static struct {
  int active;
  struct slot* owner; /* the slot whose connection the statement is on */
  struct AdbcStatement st;
  struct ArrowArrayStream stream;
  int64_t rows;
} pending;

static const char* status_name(AdbcStatusCode st) {
  static const char* names[] = {"OK", "UNKNOWN", "NOT_IMPLEMENTED", "NOT_FOUND", "ALREADY_EXISTS",
                                "INVALID_ARGUMENT", "INVALID_STATE", "INVALID_DATA", "INTEGRITY",
                                "INTERNAL", "IO", "CANCELLED", "TIMEOUT", "UNAUTHENTICATED",
                                "UNAUTHORIZED"};
  return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

static int printable(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') return 0;
  }
  return 1;
}

/* Appends the fields describing a failure; `e` may be NULL (stream errors without details). */
static void error_fields(struct jbuf* o, const char* where, AdbcStatusCode st,
                         const struct AdbcError* e, const char* fallback_message) {
  jb_str(o, "{\"ok\":false,\"where\":");
  jb_quote(o, where, strlen(where));
  jb_printf(o, ",\"status\":%d,\"status_name\":\"%s\"", st, status_name(st));
  const char* msg = e && e->message ? e->message : fallback_message ? fallback_message : "";
  jb_str(o, ",\"message\":");
  jb_quote(o, msg, strlen(msg));
  jb_str(o, ",\"details\":{");
  if (e) {
    /* Details exist only when the driver took the 1.1 path ADBC_ERROR_INIT asked for. */
    int n = e->vendor_code == ADBC_ERROR_VENDOR_CODE_PRIVATE_DATA && drv.ErrorGetDetailCount
                ? drv.ErrorGetDetailCount(e)
                : 0;
    for (int i = 0; i < n; i++) {
      struct AdbcErrorDetail d = drv.ErrorGetDetail(e, i);
      if (i) jb_str(o, ",");
      jb_quote(o, d.key, strlen(d.key));
      jb_str(o, ":");
      if (printable(d.value, d.value_length)) {
        jb_quote(o, (const char*)d.value, d.value_length);
      } else {
        jb_str(o, "\"(binary)\"");
      }
    }
  }
  jb_str(o, "}");
  char state[6] = {0};
  if (e) memcpy(state, e->sqlstate, 5);
  jb_str(o, ",\"sqlstate\":");
  jb_quote(o, state, strlen(state));
  jb_printf(o, ",\"vendor_code\":%d}", e ? e->vendor_code : 0);
}

/* Turns o into the failure answer and releases `e`: `e` must not be passed to the driver again. */
static void fail(struct jbuf* o, const char* where, AdbcStatusCode st, struct AdbcError* e) {
  jb_clear(o);
  error_fields(o, where, st, e, NULL);
  if (e->release) e->release(e);
}

/* Set once input has ended; then whether a release failed, which decides the exit status. */
static int at_end_of_input, end_cleanup_failed;

static int answer_ok(const struct jbuf* o) { return strncmp(o->data, "{\"ok\":true", 10) == 0; }

/*
 * Reports a cleanup call's outcome; `e` is that call's own error (fresh ADBC_ERROR_INIT), always
 * released here. A failure turns an answer that was a success into this failure; an answer that
 * already reports a failure keeps it (the first cause), and this one goes to standard error, as
 * it does with o == NULL (at exit). Returns rc.
 */
static AdbcStatusCode cleanup(struct jbuf* o, const char* where, AdbcStatusCode rc, struct AdbcError* e) {
  if (rc != ADBC_STATUS_OK) {
    if (o && answer_ok(o)) {
      fail(o, where, rc, e);
      return rc;
    }
    fprintf(stderr, "%s failed during cleanup: %s: %s\n", where, status_name(rc),
            e->message ? e->message : "");
    if (at_end_of_input) end_cleanup_failed = 1;
  }
  if (e->release) e->release(e);
  return rc;
}

static AdbcStatusCode release_statement(struct jbuf* o, struct AdbcStatement* st) {
  struct AdbcError e = ADBC_ERROR_INIT;
  return cleanup(o, "StatementRelease", drv.StatementRelease(st, &e), &e);
}

static AdbcStatusCode release_connection(struct jbuf* o, struct AdbcConnection* cn) {
  struct AdbcError e = ADBC_ERROR_INIT;
  return cleanup(o, "ConnectionRelease", drv.ConnectionRelease(cn, &e), &e);
}

static AdbcStatusCode release_database(struct jbuf* o, struct AdbcDatabase* db) {
  struct AdbcError e = ADBC_ERROR_INIT;
  return cleanup(o, "DatabaseRelease", drv.DatabaseRelease(db, &e), &e);
}

/* Releases the open stream and its statement, if any. */
static void release_pending(struct jbuf* o) {
  if (!pending.active) return;
  if (pending.stream.release) pending.stream.release(&pending.stream);
  release_statement(o, &pending.st);
  pending.active = 0;
  pending.owner = NULL;
}

static void usage_error(struct jbuf* o, const char* msg) {
  jb_clear(o);
  jb_str(o, "{\"ok\":false,\"where\":\"usage\",\"message\":");
  jb_quote(o, msg, strlen(msg));
  jb_str(o, "}");
}

static struct slot* slot_of(struct jbuf* o, const char* field, int want_open) {
  char* end;
  long h = strtol(field, &end, 10);
  if (*field == '\0' || *end != '\0' || h < 0 || h >= SLOTS) {
    usage_error(o, "slot must be 0..7");
    return NULL;
  }
  if (slots[h].open != want_open) {
    usage_error(o, want_open ? "slot is not connected" : "slot is already connected");
    return NULL;
  }
  return &slots[h];
}

/*
 * Reads `stream` to its end. Rows are rendered into o as "rows":[...] when `render` is set,
 * otherwise only counted; `rows_at` (may be NULL) gets the offset in o where that array begins
 * and, with the array ending at o->len on success, is what check_rows compares. A failing
 * get_next reports its errno, message and, through ErrorFromArrayStream, the ADBC status and
 * details. Returns 0 on success. Releases nothing.
 */
static int read_stream(struct jbuf* o, struct ArrowArrayStream* stream, int render, int64_t max_batches,
                       int64_t* rows, size_t* rows_at) {
  struct ArrowSchema schema = {0};
  char err[256] = {0};
  int rc = stream->get_schema(stream, &schema);
  if (rc != 0) goto stream_failed;
  if (render) {
    jb_str(o, ",\"schema\":");
    render_fields(o, &schema);
    jb_str(o, ",\"rows\":");
    if (rows_at) *rows_at = o->len;
    jb_str(o, "[");
  }
  int64_t seen = 0, batches = 0;
  for (; max_batches < 0 || batches < max_batches; batches++) {
    struct ArrowArray batch = {0};
    rc = stream->get_next(stream, &batch);
    if (rc != 0) goto stream_failed;
    if (batch.release == NULL) break;
    for (int64_t r = 0; render && r < batch.length; r++) {
      if (seen + r) jb_str(o, ",");
      if (render_row(o, &schema, &batch, r, err, sizeof err)) {
        batch.release(&batch);
        schema.release(&schema);
        usage_error(o, err);
        return -1;
      }
    }
    seen += batch.length;
    batch.release(&batch);
  }
  if (render) jb_str(o, "]");
  *rows += seen;
  schema.release(&schema);
  return 0;

stream_failed : {
  const char* last = stream->get_last_error(stream);
  AdbcStatusCode st = ADBC_STATUS_UNKNOWN;
  const struct AdbcError* e = drv.ErrorFromArrayStream ? drv.ErrorFromArrayStream(stream, &st) : NULL;
  jb_clear(o);
  error_fields(o, "ArrowArrayStream", st, e, last);
  o->len--; /* reopen the object to add the errno */
  jb_printf(o, ",\"errno\":%d}", rc);
  if (schema.release) schema.release(&schema);
  return -1;
}
}

/* A new statement on `s` with the sequence header (SEQ or "next") and the SQL set. */
static int prepare_statement(struct jbuf* o, struct slot* s, const char* seq, const char* sql,
                             struct AdbcStatement* st, int64_t* used) {
  struct AdbcError e = ADBC_ERROR_INIT;
  AdbcStatusCode rc;
  char buf[32];
  if (strcmp(seq, "next") == 0) {
    int64_t n;
    if ((rc = drv.ConnectionGetOptionInt(&s->cn, NEXT_OPTION, &n, &e))) {
      fail(o, "ConnectionGetOptionInt", rc, &e);
      return -1;
    }
    snprintf(buf, sizeof buf, "%lld", (long long)n);
    seq = buf;
  }
  *used = strtoll(seq, NULL, 10);
  memset(st, 0, sizeof *st);
  if ((rc = drv.StatementNew(&s->cn, st, &e))) {
    fail(o, "StatementNew", rc, &e);
    return -1;
  }
  /* One value per statement: the driver appends on a second SetOption of the same header. */
  if ((rc = drv.StatementSetOption(st, SEQUENCE_OPTION, seq, &e)) ||
      (rc = drv.StatementSetSqlQuery(st, sql, &e))) {
    fail(o, "StatementSetOption/SetSqlQuery", rc, &e);
    release_statement(o, st);
    return -1;
  }
  return 0;
}

/*
 * Compares the rendered "rows" array, o->data[at, end) as read_stream placed it, with `expect`;
 * turns o into a failure if they differ. Offsets rather than a text search: a struct field named
 * "rows" or "row_count" inside the values must not be taken for the answer's own keys.
 */
static void check_rows(struct jbuf* o, const char* expect, size_t at, size_t end) {
  if (!expect) return;
  const char* rows = o->data + at;
  size_t n = strlen(expect);
  size_t have = end - at;
  if (have == n && memcmp(rows, expect, n) == 0) return;
  struct jbuf got;
  jb_init(&got);
  jb_put(&got, rows, have);
  jb_clear(o);
  jb_str(o, "{\"ok\":false,\"where\":\"values\",\"expected\":");
  jb_quote(o, expect, n);
  jb_str(o, ",\"got\":");
  jb_quote(o, got.data, got.len);
  jb_str(o, "}");
  jb_free(&got);
}

static AdbcStatusCode open_database(struct AdbcDatabase* db, const char* auth, struct AdbcError* e) {
  AdbcStatusCode rc;
  memset(db, 0, sizeof *db);
  if ((rc = drv.DatabaseNew(db, e)) || (rc = drv.DatabaseSetOption(db, "uri", uri, e)) ||
      (auth && (rc = drv.DatabaseSetOption(db, AUTH_OPTION, auth, e))) ||
      (rc = drv.DatabaseInit(db, e))) {
    if (db->private_data) release_database(NULL, db);
  }
  return rc;
}

/* A whole field as a decimal integer: no sign but '-', no spaces, no trailing text, no overflow. */
static int parse_int64(const char* field, int64_t* out) {
  const char* p = field[0] == '-' ? field + 1 : field;
  if (*p == '\0') return -1;
  for (; *p; p++) {
    if (!isdigit((unsigned char)*p)) return -1;
  }
  errno = 0;
  long long v = strtoll(field, NULL, 10);
  if (errno == ERANGE) return -1;
  *out = v;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Comma-separated GetInfo codes (empty: none, meaning all); NULL, or why they are refused. */
static const char* parse_codes(const char* p, uint32_t* codes, size_t* count) {
  *count = 0;
  if (*p == '\0') return NULL;
  for (;;) {
    size_t k = strcspn(p, ",");
    if (*count == MAX_INFO_CODES) return "info takes at most 64 codes";
    if (k == 0) return "info codes must be comma-separated numbers";
    if (k > 10) return "info code out of range (32 bits)";
    uint64_t v = 0;
    for (size_t i = 0; i < k; i++) {
      if (!isdigit((unsigned char)p[i])) return "info codes must be comma-separated numbers";
      v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v > UINT32_MAX) return "info code out of range (32 bits)";
    codes[(*count)++] = (uint32_t)v;
    if (p[k] == '\0') return NULL;
    p += k + 1;
  }
}

static void cmd_connect(struct jbuf* o, char** f, int n) {
  int attach = f[0][0] == 'a';
  struct slot* s = n == 3 ? slot_of(o, f[1], 0) : NULL;
  if (n != 3) usage_error(o, "connect|attach H TOKEN");
  if (!s) return;
  struct AdbcError e = ADBC_ERROR_INIT;
  AdbcStatusCode rc;
  char auth[512];
  int len = snprintf(auth, sizeof auth, "Bearer %s", f[2]);
  if (len < 0 || (size_t)len >= sizeof auth) {
    char msg[64];
    snprintf(msg, sizeof msg, "token too long: at most %zu characters",
             sizeof auth - 1 - strlen("Bearer "));
    usage_error(o, msg);
    return;
  }
  if (attach && !pool_open) {
    if ((rc = open_database(&pool_db, NULL, &e))) {
      fail(o, "Database", rc, &e);
      return;
    }
    pool_open = 1;
  }
  if (!attach && (rc = open_database(&s->db, auth, &e))) {
    fail(o, "Database", rc, &e);
    return;
  }
  memset(&s->cn, 0, sizeof s->cn);
  if ((rc = drv.ConnectionNew(&s->cn, &e)) ||
      (attach && (rc = drv.ConnectionSetOption(&s->cn, "adbc.flight.sql.rpc.call_header.authorization",
                                               auth, &e))) ||
      (rc = drv.ConnectionInit(&s->cn, attach ? &pool_db : &s->db, &e))) {
    fail(o, "Connection", rc, &e);
    if (s->cn.private_data) release_connection(o, &s->cn);
    if (!attach) release_database(o, &s->db);
    return;
  }
  s->open = 1;
  s->owns_db = !attach;
  jb_str(o, "{\"ok\":true}");
}

static void cmd_next(struct jbuf* o, struct slot* s) {
  struct AdbcError e = ADBC_ERROR_INIT;
  int64_t n;
  AdbcStatusCode rc = drv.ConnectionGetOptionInt(&s->cn, NEXT_OPTION, &n, &e);
  if (rc) {
    fail(o, "ConnectionGetOptionInt", rc, &e);
    return;
  }
  jb_printf(o, "{\"ok\":true,\"next_sequence\":%lld}", (long long)n);
}

static void cmd_query(struct jbuf* o, struct slot* s, char** f, int n, int keep_open) {
  struct AdbcStatement st;
  struct AdbcError e = ADBC_ERROR_INIT;
  struct ArrowArrayStream stream = {0};
  int64_t seq, affected = -1, rows = 0;
  size_t rows_at = 0;
  if (keep_open && pending.active) {
    usage_error(o, "a stream is already open");
    return;
  }
  if (prepare_statement(o, s, f[2], f[3], &st, &seq)) return;
  AdbcStatusCode rc = drv.StatementExecuteQuery(&st, &stream, &affected, &e);
  if (rc) {
    fail(o, "StatementExecuteQuery", rc, &e);
    if (stream.release) stream.release(&stream);
    release_statement(o, &st);
    return;
  }
  jb_printf(o, "{\"ok\":true,\"sequence\":%lld", (long long)seq);
  int read_ok = read_stream(o, &stream, !keep_open, keep_open ? 1 : -1, &rows, &rows_at) == 0;
  if (read_ok) {
    size_t rows_end = o->len;
    jb_printf(o, ",\"row_count\":%lld}", (long long)rows);
    if (!keep_open) check_rows(o, n > 4 ? f[4] : NULL, rows_at, rows_end);
  }
  if (keep_open && read_ok) {
    pending.active = 1;
    pending.owner = s;
    pending.st = st;
    pending.stream = stream;
    pending.rows = rows;
    return;
  }
  if (stream.release) stream.release(&stream);
  release_statement(o, &st);
}

static void cmd_drain(struct jbuf* o, char** f, int n) {
  int64_t expect = 0;
  if (n > 2) {
    usage_error(o, "drain [EXPECT_ROWS]");
    return;
  }
  if (n == 2 && parse_int64(f[1], &expect)) {
    usage_error(o, "drain EXPECT_ROWS must be an integer");
    return;
  }
  if (!pending.active) {
    usage_error(o, "no open stream");
    return;
  }
  jb_str(o, "{\"ok\":true");
  if (read_stream(o, &pending.stream, 0, -1, &pending.rows, NULL) == 0) {
    jb_printf(o, ",\"row_count\":%lld}", (long long)pending.rows);
    if (n == 2 && expect != pending.rows) {
      jb_clear(o);
      jb_printf(o, "{\"ok\":false,\"where\":\"values\",\"expected\":%lld,\"got\":%lld}", (long long)expect,
                (long long)pending.rows);
    }
  }
  release_pending(o);
}

static void cmd_partitions(struct jbuf* o, struct slot* s, char** f) {
  struct AdbcStatement st;
  struct AdbcError e = ADBC_ERROR_INIT;
  struct ArrowSchema schema = {0};
  struct AdbcPartitions parts = {0};
  int64_t seq, affected = -1;
  if (prepare_statement(o, s, f[2], f[3], &st, &seq)) return;
  AdbcStatusCode rc = drv.StatementExecutePartitions(&st, &schema, &parts, &affected, &e);
  if (rc) {
    fail(o, "StatementExecutePartitions", rc, &e);
  } else {
    jb_printf(o, "{\"ok\":true,\"sequence\":%lld,\"schema\":", (long long)seq);
    render_fields(o, &schema);
    jb_str(o, ",\"partitions\":[");
    for (size_t i = 0; i < parts.num_partitions; i++) {
      if (i) jb_str(o, ",");
      jb_str(o, "\"");
      for (size_t k = 0; k < parts.partition_lengths[i]; k++) {
        jb_printf(o, "%02x", (unsigned)parts.partitions[i][k]);
      }
      jb_str(o, "\"");
    }
    jb_str(o, "]}");
  }
  if (schema.release) schema.release(&schema);
  if (parts.release) parts.release(&parts);
  release_statement(o, &st);
}

static void cmd_readpart(struct jbuf* o, struct slot* s, char** f, int n) {
  const char* hex = f[2];
  size_t digits = strlen(hex);
  if (digits % 2) {
    usage_error(o, "partition must be hex: an even number of digits");
    return;
  }
  size_t len = digits / 2;
  uint8_t* bytes = malloc(len ? len : 1);
  if (!bytes) abort();
  for (size_t i = 0; i < len; i++) {
    int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      free(bytes);
      usage_error(o, "partition must be hex: digits 0-9, a-f, A-F only");
      return;
    }
    bytes[i] = (uint8_t)(hi << 4 | lo);
  }
  struct AdbcError e = ADBC_ERROR_INIT;
  struct ArrowArrayStream stream = {0};
  int64_t rows = 0;
  size_t rows_at = 0;
  AdbcStatusCode rc = drv.ConnectionReadPartition(&s->cn, bytes, len, &stream, &e);
  free(bytes);
  if (rc) {
    fail(o, "ConnectionReadPartition", rc, &e);
    if (stream.release) stream.release(&stream);
    return;
  }
  jb_str(o, "{\"ok\":true");
  if (read_stream(o, &stream, 1, -1, &rows, &rows_at) == 0) {
    size_t rows_end = o->len;
    jb_printf(o, ",\"row_count\":%lld}", (long long)rows);
    check_rows(o, n > 3 ? f[3] : NULL, rows_at, rows_end);
  }
  if (stream.release) stream.release(&stream);
}

static const char* opt(const char* field) { return *field ? field : NULL; }

/* Metadata calls: each yields a stream (or, for GetTableSchema, a schema) rendered whole. */
static void cmd_metadata(struct jbuf* o, struct slot* s, char** f, int n) {
  struct AdbcError e = ADBC_ERROR_INIT;
  struct ArrowArrayStream stream = {0};
  AdbcStatusCode rc;
  const char* what = f[0];
  if (strcmp(what, "objects") == 0 && n == 6) {
    int64_t depth;
    if (parse_int64(f[2], &depth) || depth < INT32_MIN || depth > INT32_MAX) {
      usage_error(o, "objects DEPTH must be an integer");
      return;
    }
    rc = drv.ConnectionGetObjects(&s->cn, (int)depth, opt(f[3]), opt(f[4]), opt(f[5]), NULL, NULL,
                                  &stream, &e);
  } else if (strcmp(what, "tabletypes") == 0 && n == 2) {
    rc = drv.ConnectionGetTableTypes(&s->cn, &stream, &e);
  } else if (strcmp(what, "info") == 0 && n == 3) {
    uint32_t codes[MAX_INFO_CODES];
    size_t count = 0;
    const char* refused = parse_codes(f[2], codes, &count);
    if (refused) {
      usage_error(o, refused);
      return;
    }
    rc = drv.ConnectionGetInfo(&s->cn, count ? codes : NULL, count, &stream, &e);
  } else if (strcmp(what, "tableschema") == 0 && n == 5) {
    struct ArrowSchema schema = {0};
    rc = drv.ConnectionGetTableSchema(&s->cn, opt(f[2]), opt(f[3]), f[4], &schema, &e);
    if (rc) {
      fail(o, "ConnectionGetTableSchema", rc, &e);
      if (schema.release) schema.release(&schema);
      return;
    }
    jb_str(o, "{\"ok\":true,\"schema\":");
    render_fields(o, &schema);
    jb_str(o, "}");
    if (schema.release) schema.release(&schema);
    return;
  } else {
    usage_error(o, "objects H DEPTH CAT SCHEMA TABLE | tabletypes H | info H CODES | tableschema H CAT SCHEMA TABLE");
    return;
  }
  if (rc) {
    fail(o, what, rc, &e);
    if (stream.release) stream.release(&stream);
    return;
  }
  int64_t rows = 0;
  jb_str(o, "{\"ok\":true");
  if (read_stream(o, &stream, 1, -1, &rows, NULL) == 0) jb_printf(o, ",\"row_count\":%lld}", (long long)rows);
  if (stream.release) stream.release(&stream);
}

/*
 * Releases, in order, the slot's open stream and its statement (a statement must not outlive its
 * connection), the connection, and the database the slot owns: each even when one before failed,
 * the first failure answered, the rest on standard error. The slot is closed either way: its
 * handles were handed to their release calls and cannot be used again.
 */
static void cmd_close(struct jbuf* o, struct slot* s) {
  int had_stream = pending.active && pending.owner == s;
  jb_str(o, "{\"ok\":true"); /* completed below unless a release turns it into a failure */
  if (had_stream) release_pending(o);
  release_connection(o, &s->cn);
  if (s->owns_db) release_database(o, &s->db);
  s->open = 0;
  s->owns_db = 0;
  if (answer_ok(o)) jb_str(o, had_stream ? ",\"released_open_stream\":true}" : "}");
}

static void dispatch(struct jbuf* o, char** f, int n) {
  const char* c = f[0];
  if (strcmp(c, "connect") == 0 || strcmp(c, "attach") == 0) {
    cmd_connect(o, f, n);
    return;
  }
  if (strcmp(c, "drain") == 0) {
    cmd_drain(o, f, n);
    return;
  }
  struct slot* s = n >= 2 ? slot_of(o, f[1], 1) : NULL;
  if (n < 2) usage_error(o, "missing slot");
  if (!s) return;
  if (strcmp(c, "next") == 0) {
    cmd_next(o, s);
  } else if ((strcmp(c, "query") == 0 && (n == 4 || n == 5)) || (strcmp(c, "open") == 0 && n == 4)) {
    cmd_query(o, s, f, n, c[0] == 'o');
  } else if (strcmp(c, "partitions") == 0 && n == 4) {
    cmd_partitions(o, s, f);
  } else if (strcmp(c, "readpart") == 0 && (n == 3 || n == 4)) {
    cmd_readpart(o, s, f, n);
  } else if (strcmp(c, "close") == 0) {
    cmd_close(o, s);
  } else {
    cmd_metadata(o, s, f, n);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DRIVER_LIBRARY URI < commands\n", argv[0]);
    return 2;
  }
  uri = argv[2];
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 2;
  }
  AdbcDriverInitFunc init = (AdbcDriverInitFunc)dlsym(lib, "AdbcDriverFlightsqlInit");
  if (!init) init = (AdbcDriverInitFunc)dlsym(lib, "AdbcDriverInit");
  struct AdbcError e = ADBC_ERROR_INIT;
  AdbcStatusCode rc = init ? init(ADBC_VERSION_1_1_0, &drv, &e) : ADBC_STATUS_NOT_FOUND;
  if (rc) {
    fprintf(stderr, "driver init failed: %s\n", e.message ? e.message : status_name(rc));
    if (e.release) e.release(&e);
    return 2;
  }
  struct jbuf out;
  jb_init(&out);
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, stdin)) > 0) {
    if (line[len - 1] == '\n') line[--len] = '\0';
    if (len == 0) continue;
    char* fields[MAX_FIELDS];
    int n = 0;
    for (char* p = line; n < MAX_FIELDS; n++) {
      fields[n] = p;
      char* tab = strchr(p, '\t');
      if (!tab) {
        n++;
        break;
      }
      *tab = '\0';
      p = tab + 1;
    }
    jb_clear(&out);
    dispatch(&out, fields, n);
    fputs(out.data, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  /* At the end of input: the open stream before its connection, connections before databases. */
  at_end_of_input = 1;
  release_pending(NULL);
  for (int i = 0; i < SLOTS; i++) {
    if (slots[i].open) {
      release_connection(NULL, &slots[i].cn);
      if (slots[i].owns_db) release_database(NULL, &slots[i].db);
      slots[i].open = 0;
    }
  }
  if (pool_open) release_database(NULL, &pool_db);
  free(line);
  jb_free(&out);
  if (drv.release) {
    struct AdbcError de = ADBC_ERROR_INIT;
    cleanup(NULL, "AdbcDriver.release", drv.release(&drv, &de), &de);
  }
  return end_cleanup_failed ? 3 : 0;
}
