/*
** mp_render.c: the text and JSON renderers of an mp_report.
**
** Text keeps the layout of Tarantool's memprof parser (sections, one line
** per site, tab-separated sizes, "Overrides:" blocks, HEAP SUMMARY) so
** people and scripts used to it read ours the same way. JSON carries the
** same data plus what a program needs to tell sites apart (kind, chunk,
** line, addresses); docs/REPORT.md describes it field by field.
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_render.h"

/* The sections in the order they are printed, and their names. */
static const uint8_t order[3] = { MP_AEV_ALLOC, MP_AEV_REALLOC, MP_AEV_FREE };
static const char *const section[MP_AEV_N] = {
  NULL, "ALLOCATIONS", "DEALLOCATIONS", "REALLOCATIONS"
};
static const char *const jsection[MP_AEV_N] = {
  NULL, "allocations", "deallocations", "reallocations"
};

const char *mp_fmt_bytes(char *buf, size_t size, uint64_t n, int human)
{
  static const char *const unit[] = {
    "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
  };
  double v = (double)n;
  int u = 0;
  if (!human || n < 1024) {
    snprintf(buf, size, "%lluB", (unsigned long long)n);
    return buf;
  }
  while (v >= 1024 && u < 6) { v /= 1024; u++; }
  if (v == (double)(uint64_t)v)
    snprintf(buf, size, "%llu%s", (unsigned long long)v, unit[u]);
  else
    snprintf(buf, size, "%.2f%s", v, unit[u]);
  return buf;
}

/* Rows of a section to print. */
static uint32_t shown(uint32_t n, const mp_report_opts *o)
{
  return o->top && o->top < n ? (uint32_t)o->top : n;
}

/* -- Text ----------------------------------------------------------------- */

/* Note that site i's alias (if any) is printed. */
static void mark_alias(const mp_report *rep, uint32_t i, uint8_t *used)
{
  uint32_t a = rep->p->site[i].alias;
  if (a) used[a] = 1;
}

/* Print an alias's text with line numbers. */
static void text_alias(FILE *out, const mp_alias *a, uint32_t num)
{
  size_t i = 0, line = 1;
  fprintf(out, "function_alias_%u:\n", num);
  while (i < a->len) {
    const char *nl = memchr(a->text + i, '\n', a->len - i);
    size_t end = nl ? (size_t)(nl - a->text) : a->len;
    fprintf(out, "%zu\t| %.*s\n", line++, (int)(end - i), a->text + i);
    i = end + 1;
  }
  fputc('\n', out);
}

int mp_render_text(FILE *out, const mp_report *rep, const mp_report_opts *o)
{
  const mp_profile *p = rep->p;
  uint8_t *used = calloc((size_t)p->nalias + 1, 1);
  char b1[64], b2[64];
  uint32_t i, j, n;
  int x, k;
  if (!used) return -1;
  for (x = 0; x < 3 && !o->leak_only; x++) {
    k = order[x];
    fprintf(out, "%s\n", section[k]);
    for (i = 0, n = shown(rep->nrow[k], o); i < n; i++) {
      const mp_row *r = &rep->row[k][i];
      const mp_site *s = &p->site[r->site];
      fprintf(out, "%s: %llu events\t+%s\t-%s\n", rep->label[r->site],
	      (unsigned long long)s->n[k],
	      mp_fmt_bytes(b1, sizeof(b1), s->plus[k], o->human),
	      mp_fmt_bytes(b2, sizeof(b2), s->minus[k], o->human));
      mark_alias(rep, r->site, used);
      if (!r->nlink) continue;
      fputs("\tOverrides:\n", out);
      for (j = 0; j < r->nlink; j++) {
	uint32_t owner = p->link[rep->link[r->link0 + j]].owner;
	fprintf(out, "\t\t%s\n", rep->label[owner]);
	mark_alias(rep, owner, used);
      }
      fputc('\n', out);
    }
    fputc('\n', out);
  }
  fputs("HEAP SUMMARY:\n", out);
  for (i = 0, n = shown(rep->nheld, o); i < n; i++) {
    const mp_held *h = &rep->held[i];
    fprintf(out, "%s holds %s: %llu allocs, %llu frees\n",
	    rep->label[h->site], mp_fmt_bytes(b1, sizeof(b1), h->bytes, o->human),
	    (unsigned long long)h->nalloc, (unsigned long long)h->nfree);
    mark_alias(rep, h->site, used);
  }
  fputc('\n', out);
  for (i = 1, j = 0; i < p->nalias; i++) {
    if (!used[i]) continue;
    if (!j++) fputs("ALIASES:\n", out);
    text_alias(out, &p->alias[i], i);
  }
  free(used);
  return ferror(out) ? -1 : 0;
}

/* -- JSON ----------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
  size_t len, i;
  uint32_t cp;
  if (s[0] < 0xc2) return 0;	/* Continuation byte or overlong lead. */
  len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
  if (!len || len > n) return 0;
  cp = s[0] & (0x7f >> len);
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return len;
}

/* Print n bytes at s as a JSON string. Valid UTF-8 passes through; a byte
** that is not part of valid UTF-8 becomes the code point of the same value
** (U+0080 to U+00FF), so the output is always valid JSON. */
static void jstr(FILE *out, const char *s, size_t n)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  fputc('"', out);
  while (i < n) {
    unsigned char c = u[i];
    size_t m;
    if (c == '"' || c == '\\') { fputc('\\', out); fputc(c, out); }
    else if (c == '\n') fputs("\\n", out);
    else if (c == '\t') fputs("\\t", out);
    else if (c < 0x20 || c == 0x7f) fprintf(out, "\\u%04x", c);
    else if (c < 0x80) fputc(c, out);
    else if ((m = utf8_len(u + i, n - i)) != 0) {
      fwrite(u + i, 1, m, out);
      i += m;
      continue;
    } else fprintf(out, "\\u%04x", c);
    i++;
  }
  fputc('"', out);
}

static void jcstr(FILE *out, const char *s)
{
  jstr(out, s, strlen(s));
}

/* A Lua chunk (or its alias) as "chunk" and maybe "alias" fields. */
static void jchunk(FILE *out, const char *field, const mp_sym *chunk,
		   uint32_t alias)
{
  fprintf(out, ",\"%s\":", field);
  jstr(out, chunk->name, chunk->name_len);
  if (alias) fprintf(out, ",\"alias\":\"function_alias_%u\"", alias);
}

/* The source object of site i. */
static void jsource(FILE *out, const mp_report *rep, uint32_t i)
{
  const mp_profile *p = rep->p;
  const mp_site *s = &p->site[i];
  const mp_sym *sym = s->sym ? &p->syms.sym[s->sym] : NULL;
  static const char *const kind[] = {
    "?", "internal", "lua", "cfunc", "trace", "?", "?", "?"
  };
  fprintf(out, "{\"kind\":\"%s\",\"label\":", kind[(s->src >> 2) & 7]);
  jcstr(out, rep->label[i]);
  switch (s->src) {
  case MP_SRC_LFUNC:
    fprintf(out, ",\"address\":%llu,\"line\":%llu",
	    (unsigned long long)s->id, (unsigned long long)s->line);
    if (sym) {
      jchunk(out, "chunk", sym, s->alias);
      fprintf(out, ",\"function_line\":%llu", (unsigned long long)sym->line);
    }
    break;
  case MP_SRC_CFUNC:
    fprintf(out, ",\"address\":%llu", (unsigned long long)s->id);
    if (sym) {
      fputs(",\"name\":", out);
      jstr(out, sym->name, sym->name_len);
      fprintf(out, ",\"offset\":%llu", (unsigned long long)s->off);
    }
    break;
  case MP_SRC_TRACE:
    fprintf(out, ",\"trace\":%llu", (unsigned long long)s->id);
    if (sym && sym->start) {
      jchunk(out, "start_chunk", &p->syms.sym[sym->start], s->alias);
      fprintf(out, ",\"start_line\":%llu", (unsigned long long)sym->line);
    }
    break;
  }
  fputc('}', out);
}

int mp_render_json(FILE *out, const mp_report *rep, const mp_report_opts *o,
		   const char *file)
{
  const mp_profile *p = rep->p;
  uint8_t *used = calloc((size_t)p->nalias + 1, 1);
  uint32_t i, j, n;
  int x, k;
  if (!used) return -1;
  fputs("{\"format\":\"ljmemprof-report\",\"format_version\":1,\"file\":", out);
  jcstr(out, file);
  fprintf(out, ",\"complete\":%s", p->rc == MP_END ? "true" : "false");
  if (p->rc != MP_END)
    fprintf(out, ",\"truncated_at\":%zu", p->r.err_offset);
  fprintf(out, ",\"versions\":{\"symtab\":%d,\"events\":%d}",
	  p->r.ljs_version, p->r.ljm_version);
  fprintf(out, ",\"sort\":\"%s\",\"top\":%llu",
	  o->sort == MP_SORT_COUNT ? "count" : "bytes",
	  (unsigned long long)o->top);
  fprintf(out, ",\"totals\":{\"alloc_events\":%llu,\"realloc_events\":%llu,"
	  "\"free_events\":%llu,\"alloc_bytes\":%llu,\"free_bytes\":%llu}",
	  (unsigned long long)p->nev[MP_AEV_ALLOC],
	  (unsigned long long)p->nev[MP_AEV_REALLOC],
	  (unsigned long long)p->nev[MP_AEV_FREE],
	  (unsigned long long)p->alloc_bytes,
	  (unsigned long long)p->free_bytes);
  for (x = 0; x < 3 && !o->leak_only; x++) {
    k = order[x];
    fprintf(out, ",\n\"%s\":[", jsection[k]);
    for (i = 0, n = shown(rep->nrow[k], o); i < n; i++) {
      const mp_row *r = &rep->row[k][i];
      const mp_site *s = &p->site[r->site];
      fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
      jsource(out, rep, r->site);
      used[s->alias] = 1;
      fprintf(out, ",\"events\":%llu,\"alloc_bytes\":%llu,"
	      "\"free_bytes\":%llu", (unsigned long long)s->n[k],
	      (unsigned long long)s->plus[k], (unsigned long long)s->minus[k]);
      if (k != MP_AEV_ALLOC) {
	fputs(",\"overrides\":[", out);
	for (j = 0; j < r->nlink; j++) {
	  const mp_link *l = &p->link[rep->link[r->link0 + j]];
	  fputs(j ? ",{\"source\":" : "{\"source\":", out);
	  jsource(out, rep, l->owner);
	  used[p->site[l->owner].alias] = 1;
	  fprintf(out, ",\"blocks\":%llu,\"alloc_bytes\":%llu,"
		  "\"free_bytes\":%llu}", (unsigned long long)l->count,
		  (unsigned long long)l->alloced,
		  (unsigned long long)l->freed);
	}
	fputc(']', out);
      }
      fputc('}', out);
    }
    fputs("]", out);
  }
  fputs(",\n\"heap_summary\":[", out);
  for (i = 0, n = shown(rep->nheld, o); i < n; i++) {
    const mp_held *h = &rep->held[i];
    fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
    jsource(out, rep, h->site);
    used[p->site[h->site].alias] = 1;
    fprintf(out, ",\"bytes\":%llu,\"allocs\":%llu,\"frees\":%llu}",
	    (unsigned long long)h->bytes, (unsigned long long)h->nalloc,
	    (unsigned long long)h->nfree);
  }
  fputs("],\n\"aliases\":[", out);
  for (i = 1, j = 0; i < p->nalias; i++) {
    if (!used[i]) continue;
    fprintf(out, "%s{\"name\":\"function_alias_%u\",\"text\":", j++ ? "," : "",
	    i);
    jstr(out, p->alias[i].text, p->alias[i].len);
    fputc('}', out);
  }
  fputs("]}\n", out);
  free(used);
  return ferror(out) ? -1 : 0;
}
