/*
** ljmemprof: read memprof profiles.
**
** usage: ljmemprof events FILE    one JSON object per event, resolved
*/

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "format/mp_format.h"
#include "report/mp_file.h"
#include "report/mp_symtab.h"

/* Print s as a JSON string. */
static void json_str(FILE *out, const char *s, size_t n)
{
  size_t i;
  fputc('"', out);
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c < 0x20) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

static const char *src_name(int src)
{
  switch (src) {
  case MP_SRC_LFUNC: return "lua";
  case MP_SRC_CFUNC: return "cfunc";
  case MP_SRC_TRACE: return "trace";
  default: return "internal";
  }
}

/* Print the location fields of an event. */
static void json_loc(FILE *out, const mp_symtab *t, const mp_item *it)
{
  char label[512];
  uint32_t i;
  mp_symtab_label(t, it, label, sizeof(label));
  fprintf(out, "\"source\":\"%s\",\"label\":", src_name(it->src));
  json_str(out, label, strlen(label));
  switch (it->src) {
  case MP_SRC_LFUNC:
    i = mp_symtab_find(t, MP_K_SYM_LFUNC, it->id);
    fprintf(out, ",\"line\":%llu,\"chunk\":", (unsigned long long)it->line);
    if (i) json_str(out, t->sym[i].name, t->sym[i].name_len);
    else fputs("null", out);
    break;
  case MP_SRC_CFUNC:
    i = mp_symtab_find(t, MP_K_SYM_CFUNC, it->id);
    fputs(",\"name\":", out);
    if (i) json_str(out, t->sym[i].name, t->sym[i].name_len);
    else fputs("null", out);
    break;
  case MP_SRC_TRACE:
    i = mp_symtab_find(t, MP_K_SYM_TRACE, it->id);
    fprintf(out, ",\"trace\":%llu", (unsigned long long)it->id);
    if (i && t->sym[i].start) {
      const mp_sym *p = &t->sym[t->sym[i].start];
      fprintf(out, ",\"start_line\":%llu,\"start_chunk\":",
	      (unsigned long long)t->sym[i].line);
      json_str(out, p->name, p->name_len);
    }
    break;
  }
}

static int cmd_events(const char *path)
{
  mp_file f;
  mp_reader r;
  mp_item it;
  mp_symtab t;
  int rc;
  FILE *out = stdout;
  if (mp_file_open(&f, path) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s\n", path, strerror(errno));
    return 2;
  }
  mp_symtab_init(&t);
  rc = mp_reader_init(&r, f.data, f.len);
  while (rc == MP_OK && (rc = mp_reader_next(&r, &it)) == MP_OK) {
    if (it.kind >= MP_K_SYM_LFUNC) { mp_symtab_add(&t, &it); continue; }
    fprintf(out, "{\"event\":\"%s\",", mp_kind_name(it.kind));
    json_loc(out, &t, &it);
    fprintf(out, ",\"oaddr\":%llu,\"osize\":%llu,\"naddr\":%llu,"
	    "\"nsize\":%llu}\n",
	    (unsigned long long)it.oaddr, (unsigned long long)it.osize,
	    (unsigned long long)it.naddr, (unsigned long long)it.nsize);
  }
  fprintf(out, "{\"complete\":%s}\n", rc == MP_END ? "true" : "false");
  if (rc != MP_END)
    fprintf(stderr, "ljmemprof: %s: %s at byte %zu: expected %s\n", path,
	    rc == MP_ERR_TRUNC ? "truncated" : "bad data", r.err_offset,
	    r.err);
  mp_symtab_free(&t);
  mp_file_close(&f);
  return rc == MP_END ? 0 : rc == MP_ERR_TRUNC ? 3 : 2;
}

int main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "events") == 0) return cmd_events(argv[2]);
  fprintf(stderr, "usage: ljmemprof events FILE\n");
  return 2;
}
