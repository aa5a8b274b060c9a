/* Renders Arrow C data interface arrays as JSON text, for the ADBC C consumer. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "adbc.h"

/* A growable, always NUL-terminated text buffer. Aborts on allocation failure. */
struct jbuf {
  char* data;
  size_t len;
  size_t cap;
};

void jb_init(struct jbuf* b);
void jb_free(struct jbuf* b);
void jb_clear(struct jbuf* b);
void jb_put(struct jbuf* b, const char* s, size_t n);
void jb_str(struct jbuf* b, const char* s);
void jb_printf(struct jbuf* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends `s` (n bytes) as a JSON string literal. */
void jb_quote(struct jbuf* b, const char* s, size_t n);

/*
 * Appends row `row` of a record batch (a struct array whose children are the columns) as a JSON
 * array of column values. Nested structs become objects keyed by field name, lists become
 * arrays, unions render their selected child, binary becomes a hex string. Returns 0, or -1 with
 * a message in `err` for a type the renderer does not know, dictionary-encoded columns among them.
 */
int render_row(struct jbuf* b, const struct ArrowSchema* schema, const struct ArrowArray* batch,
               int64_t row, char* err, size_t errlen);

/* Appends [{"name":..,"format":..,"nullable":..},...] for the top-level fields of `schema`. */
void render_fields(struct jbuf* b, const struct ArrowSchema* schema);
