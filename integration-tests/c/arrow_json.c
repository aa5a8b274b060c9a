/* Arrow C data interface → JSON. Only reads the arrays; ownership stays with the caller. */
#include "arrow_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jb_init(struct jbuf* b) {
  b->cap = 256;
  b->len = 0;
  b->data = malloc(b->cap);
  if (!b->data) abort();
  b->data[0] = '\0';
}

void jb_free(struct jbuf* b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

void jb_clear(struct jbuf* b) {
  b->len = 0;
  b->data[0] = '\0';
}

static void reserve(struct jbuf* b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  while (b->len + extra + 1 > b->cap) b->cap *= 2;
  b->data = realloc(b->data, b->cap);
  if (!b->data) abort();
}

void jb_put(struct jbuf* b, const char* s, size_t n) {
  reserve(b, n);
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void jb_str(struct jbuf* b, const char* s) { jb_put(b, s, strlen(s)); }

void jb_printf(struct jbuf* b, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Escapes exactly as Python's json.dumps(ensure_ascii=False) does, so texts compare byte-wise. */
void jb_quote(struct jbuf* b, const char* s, size_t n) {
  jb_put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '"': jb_put(b, "\\\"", 2); break;
      case '\\': jb_put(b, "\\\\", 2); break;
      case '\n': jb_put(b, "\\n", 2); break;
      case '\r': jb_put(b, "\\r", 2); break;
      case '\t': jb_put(b, "\\t", 2); break;
      case '\b': jb_put(b, "\\b", 2); break;
      case '\f': jb_put(b, "\\f", 2); break;
      default:
        if (c < 0x20) {
          jb_printf(b, "\\u%04x", c);
        } else {
          jb_put(b, (const char*)&s[i], 1);
        }
    }
  }
  jb_put(b, "\"", 1);
}

static int bit(const void* bitmap, int64_t i) {
  return (((const uint8_t*)bitmap)[i >> 3] >> (i & 7)) & 1;
}

static int is_null(const struct ArrowSchema* s, const struct ArrowArray* a, int64_t j) {
  if (s->format[0] == 'n') return 1;
  if (s->format[0] == '+' && s->format[1] == 'u') return 0; /* unions have no validity buffer */
  return a->null_count != 0 && a->buffers[0] != NULL && !bit(a->buffers[0], j);
}

static void hex(struct jbuf* b, const uint8_t* p, int64_t n) {
  static const char digits[] = "0123456789abcdef";
  jb_put(b, "\"", 1);
  for (int64_t i = 0; i < n; i++) {
    char two[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
    jb_put(b, two, 2);
  }
  jb_put(b, "\"", 1);
}

static int value(struct jbuf* b, const struct ArrowSchema* s, const struct ArrowArray* a,
                 int64_t i, char* err, size_t errlen);

/* The child of a union holding `type_id`, from the format's "+ud:0,1,..." id list. */
static int union_child(const char* format, int8_t type_id) {
  const char* p = strchr(format, ':');
  for (int k = 0; p != NULL; k++) {
    if (atoi(p + 1) == type_id) return k;
    p = strchr(p + 1, ',');
  }
  return -1;
}

static int nested(struct jbuf* b, const struct ArrowSchema* s, const struct ArrowArray* a,
                  int64_t j, char* err, size_t errlen) {
  const char* f = s->format;
  if (strcmp(f, "+s") == 0) {
    jb_put(b, "{", 1);
    for (int64_t k = 0; k < s->n_children; k++) {
      if (k) jb_put(b, ",", 1);
      const char* name = s->children[k]->name ? s->children[k]->name : "";
      jb_quote(b, name, strlen(name));
      jb_put(b, ":", 1);
      if (value(b, s->children[k], a->children[k], j, err, errlen)) return -1;
    }
    jb_put(b, "}", 1);
    return 0;
  }
  if (strcmp(f, "+l") == 0 || strcmp(f, "+L") == 0 || strcmp(f, "+m") == 0) {
    int64_t start, end;
    if (f[1] == 'L') {
      start = ((const int64_t*)a->buffers[1])[j];
      end = ((const int64_t*)a->buffers[1])[j + 1];
    } else {
      start = ((const int32_t*)a->buffers[1])[j];
      end = ((const int32_t*)a->buffers[1])[j + 1];
    }
    jb_put(b, "[", 1);
    for (int64_t k = start; k < end; k++) {
      if (k > start) jb_put(b, ",", 1);
      if (value(b, s->children[0], a->children[0], k, err, errlen)) return -1;
    }
    jb_put(b, "]", 1);
    return 0;
  }
  if (strncmp(f, "+ud:", 4) == 0 || strncmp(f, "+us:", 4) == 0) {
    int8_t type_id = ((const int8_t*)a->buffers[0])[j];
    int k = union_child(f, type_id);
    if (k < 0 || k >= s->n_children) {
      snprintf(err, errlen, "union type id %d not in %s", type_id, f);
      return -1;
    }
    int64_t at = f[2] == 'd' ? ((const int32_t*)a->buffers[1])[j] : j;
    return value(b, s->children[k], a->children[k], at, err, errlen);
  }
  snprintf(err, errlen, "unsupported Arrow format %s", f);
  return -1;
}

/* Appends element `i` (logical, before this array's offset) of `a`. */
static int value(struct jbuf* b, const struct ArrowSchema* s, const struct ArrowArray* a,
                 int64_t i, char* err, size_t errlen) {
  int64_t j = a->offset + i;
  if (s->dictionary != NULL) {
    /* The array would hold indices into a->dictionary: printing them as the values is wrong. */
    snprintf(err, errlen, "dictionary-encoded column %s (index format %s) is not supported",
             s->name ? s->name : "", s->format);
    return -1;
  }
  if (is_null(s, a, j)) {
    jb_str(b, "null");
    return 0;
  }
  const char* f = s->format;
  const void* v = a->n_buffers > 1 ? a->buffers[1] : NULL;
  if (f[0] == '+') return nested(b, s, a, j, err, errlen);
  if (strcmp(f, "tdD") == 0) {
    jb_printf(b, "%d", ((const int32_t*)v)[j]);
    return 0;
  }
  if (f[1] != '\0') {
    snprintf(err, errlen, "unsupported Arrow format %s", f);
    return -1;
  }
  switch (f[0]) {
    case 'b': jb_str(b, bit(v, j) ? "true" : "false"); return 0;
    case 'c': jb_printf(b, "%d", ((const int8_t*)v)[j]); return 0;
    case 'C': jb_printf(b, "%u", ((const uint8_t*)v)[j]); return 0;
    case 's': jb_printf(b, "%d", ((const int16_t*)v)[j]); return 0;
    case 'S': jb_printf(b, "%u", ((const uint16_t*)v)[j]); return 0;
    case 'i': jb_printf(b, "%d", ((const int32_t*)v)[j]); return 0;
    case 'I': jb_printf(b, "%u", ((const uint32_t*)v)[j]); return 0;
    case 'l': jb_printf(b, "%lld", (long long)((const int64_t*)v)[j]); return 0;
    case 'L': jb_printf(b, "%llu", (unsigned long long)((const uint64_t*)v)[j]); return 0;
    case 'f': jb_printf(b, "%.9g", ((const float*)v)[j]); return 0;
    case 'g': jb_printf(b, "%.17g", ((const double*)v)[j]); return 0;
    case 'u':
    case 'z': {
      int32_t start = ((const int32_t*)v)[j], end = ((const int32_t*)v)[j + 1];
      const char* data = (const char*)a->buffers[2] + start;
      if (f[0] == 'u') {
        jb_quote(b, data, (size_t)(end - start));
      } else {
        hex(b, (const uint8_t*)data, end - start);
      }
      return 0;
    }
    case 'U':
    case 'Z': {
      int64_t start = ((const int64_t*)v)[j], end = ((const int64_t*)v)[j + 1];
      const char* data = (const char*)a->buffers[2] + start;
      if (f[0] == 'U') {
        jb_quote(b, data, (size_t)(end - start));
      } else {
        hex(b, (const uint8_t*)data, end - start);
      }
      return 0;
    }
    default:
      snprintf(err, errlen, "unsupported Arrow format %s", f);
      return -1;
  }
}

int render_row(struct jbuf* b, const struct ArrowSchema* schema, const struct ArrowArray* batch,
               int64_t row, char* err, size_t errlen) {
  jb_put(b, "[", 1);
  for (int64_t k = 0; k < schema->n_children; k++) {
    if (k) jb_put(b, ",", 1);
    if (value(b, schema->children[k], batch->children[k], batch->offset + row, err, errlen)) {
      return -1;
    }
  }
  jb_put(b, "]", 1);
  return 0;
}

void render_fields(struct jbuf* b, const struct ArrowSchema* schema) {
  jb_put(b, "[", 1);
  for (int64_t k = 0; k < schema->n_children; k++) {
    const struct ArrowSchema* c = schema->children[k];
    if (k) jb_put(b, ",", 1);
    jb_str(b, "{\"name\":");
    jb_quote(b, c->name ? c->name : "", c->name ? strlen(c->name) : 0);
    jb_str(b, ",\"format\":");
    jb_quote(b, c->format, strlen(c->format));
    jb_printf(b, ",\"nullable\":%s}", (c->flags & ARROW_FLAG_NULLABLE) ? "true" : "false");
  }
  jb_put(b, "]", 1);
}
