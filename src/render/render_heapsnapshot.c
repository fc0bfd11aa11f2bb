/*
** render_heapsnapshot.c: a heap snapshot as Chrome DevTools'
** .heapsnapshot (see mp_heapsnapshot.h).
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_heapsnapshot.h"
#include "render/mp_json.h"
#include "util/mp_hash.h"

/* DevTools' node and edge types, by index in the meta below. */
enum { NT_STRING = 2, NT_OBJECT = 3, NT_CODE = 4, NT_NATIVE = 8,
       NT_SYNTHETIC = 9 };
enum { ET_CONTEXT = 0, ET_ELEMENT = 1, ET_PROPERTY = 2, ET_INTERNAL = 3,
       ET_WEAK = 6 };

static const char meta[] =
  "{\"snapshot\":{\"meta\":{"
  "\"node_fields\":[\"type\",\"name\",\"id\",\"self_size\",\"edge_count\","
  "\"trace_node_id\",\"detachedness\"],"
  "\"node_types\":[[\"hidden\",\"array\",\"string\",\"object\",\"code\","
  "\"closure\",\"regexp\",\"number\",\"native\",\"synthetic\","
  "\"concatenated string\",\"sliced string\",\"symbol\",\"bigint\","
  "\"object shape\"],\"string\",\"number\",\"number\",\"number\","
  "\"number\",\"number\"],"
  "\"edge_fields\":[\"type\",\"name_or_index\",\"to_node\"],"
  "\"edge_types\":[[\"context\",\"element\",\"property\",\"internal\","
  "\"hidden\",\"shortcut\",\"weak\"],\"string_or_number\",\"node\"],"
  "\"trace_function_info_fields\":[\"function_id\",\"name\",\"script_name\","
  "\"script_id\",\"line\",\"column\"],"
  "\"trace_node_fields\":[\"id\",\"function_info_index\",\"count\","
  "\"size\",\"children\"],"
  "\"sample_fields\":[\"timestamp_us\",\"last_assigned_id\"],"
  "\"location_fields\":[\"object_index\",\"script_id\",\"line\","
  "\"column\"]},";

#define NODE_FIELDS	7

/* The strings array: each distinct string once, by its index. */
typedef struct strtab {
  char *b;		/* The strings, each NUL-terminated... */
  size_t n, cap;
  uint32_t *off;	/* ...their offsets, by index. */
  uint32_t count, capoff;
  mp_hash index;	/* Hash of the bytes -> index. */
} strtab;

/* The index of string p (n bytes) in the strings array, added if new;
** UINT32_MAX out of memory. */
static uint32_t intern(strtab *t, const char *p, size_t n)
{
  uint64_t hk = mp_hash_bytes(p, n);
  mp_hash_iter it;
  uint32_t *v;
  for (v = mp_hash_first(&t->index, hk, &it); v;
       v = mp_hash_next(&t->index, &it))
    if (!strncmp(t->b + t->off[*v], p, n) && !t->b[t->off[*v] + n])
      return *v;
  if (t->n + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 1 << 16;
    char *q;
    while (cap < t->n + n + 1) cap *= 2;
    if (cap > UINT32_MAX || !(q = realloc(t->b, cap))) return UINT32_MAX;
    t->b = q;
    t->cap = cap;
  }
  if (t->count == t->capoff) {
    uint32_t cap = t->capoff ? t->capoff * 2 : 1024;
    uint32_t *q = realloc(t->off, (size_t)cap * sizeof(*q));
    if (!q) return UINT32_MAX;
    t->off = q;
    t->capoff = cap;
  }
  if (mp_hash_insert(&t->index, hk, t->count) < 0) return UINT32_MAX;
  memcpy(t->b + t->n, p, n);
  t->b[t->n + n] = 0;
  t->off[t->count] = (uint32_t)t->n;
  t->n += n + 1;
  return t->count++;
}

/* An object's DevTools type and name (into buf). */
static unsigned node_of(const mp_heapsnap *h, uint32_t i, char *buf,
			size_t size, const char **name)
{
  const mp_snapshot *sn = h->sn;
  char where[300];
  unsigned t = sn->type[i];
  *name = buf;
  switch (t) {
  case MP_HT_ROOT:
    *name = "(roots)";
    return NT_SYNTHETIC;
  case MP_HT_STR:
    *name = sn->name[i] ? sn->names + sn->name[i] - 1 : "";
    return NT_STRING;
  case MP_HT_LFUNC: case MP_HT_PROTO:
    mp_heapsnap_where(h, i, where, sizeof(where));
    snprintf(buf, size, *where ? "%s (%s)" : "%s", mp_heapsnap_type(t),
	     where);
    return t == MP_HT_PROTO ? NT_CODE : NT_OBJECT;
  case MP_HT_TRACE:
    snprintf(buf, size, "trace %u", sn->name[i]);
    return NT_CODE;
  case MP_HT_BUILTIN:
    snprintf(buf, size, "builtin (ffid %u)", sn->name[i]);
    return NT_OBJECT;
  case MP_HT_CDATA:
    snprintf(buf, size, "cdata (ctype %u)", sn->name[i]);
    return NT_NATIVE;
  case MP_HT_UDATA:
    *name = mp_heapsnap_type(t);
    return NT_NATIVE;
  default:
    *name = mp_heapsnap_type(t);
    return NT_OBJECT;
  }
}

int mp_heapsnapshot_ids(const mp_snapshot *sn, uint32_t *ids)
{
  mp_hash seen;
  uint32_t i;
  int r = 1;
  memset(&seen, 0, sizeof(seen));
  if (mp_hash_reserve(&seen, sn->n) < 0 || mp_hash_add(&seen, 1) < 0) {
    mp_hash_free(&seen);
    return -1;
  }
  ids[0] = 1;
  for (i = 1; i < sn->n && r == 1; i++) {
    ids[i] = (uint32_t)((sn->addr[i] >> 3) & 0x7fffffff) * 2 + 1;
    if (mp_hash_add(&seen, ids[i]) == 0) r = 0;
  }
  mp_hash_free(&seen);
  if (!r)
    for (i = 0; i < sn->n; i++) ids[i] = 2 * i + 1;
  return r;
}

int mp_heapsnapshot_write(FILE *out, const mp_heapsnap *h, int *numbered)
{
  const mp_snapshot *sn = h->sn;
  strtab st;
  uint32_t i, k, ne = 0, *ids = malloc((size_t)sn->n * sizeof(*ids));
  char buf[512];
  int rc = -1, r;
  memset(&st, 0, sizeof(st));
  mp_hash_init_map(&st.index);
  if (!ids || (r = mp_heapsnapshot_ids(sn, ids)) < 0) goto out;
  *numbered = !r;
  for (k = 0; k < sn->ne; k++) ne += sn->e[k].to != MP_SNAP_NONE;
  fputs(meta, out);
  fprintf(out, "\"node_count\":%u,\"edge_count\":%u,"
	  "\"trace_function_count\":0},\n\"nodes\":[", sn->n, ne);
  for (i = 0; i < sn->n; i++) {
    const char *name;
    unsigned t = node_of(h, i, buf, sizeof(buf), &name);
    uint32_t s = intern(&st, name, strlen(name)), nk = 0;
    if (s == UINT32_MAX) goto out;
    for (k = sn->first[i]; k < sn->first[i + 1]; k++)
      nk += sn->e[k].to != MP_SNAP_NONE;
    fprintf(out, "%s%u,%u,%u,%llu,%u,0,0", i ? ",\n" : "", t, s, ids[i],
	    (unsigned long long)sn->size[i], nk);
  }
  fputs("],\n\"edges\":[", out);
  for (i = 0, ne = 0; i < sn->n; i++)
    for (k = sn->first[i]; k < sn->first[i + 1]; k++) {
      const mp_snap_edge *e = &sn->e[k];
      unsigned t;
      uint64_t name;
      if (e->to == MP_SNAP_NONE) continue;
      if (e->weak) t = ET_WEAK;
      else if (e->kind == MP_HE_IDX && mp_snap_arg(sn, e) <= UINT32_MAX) t = ET_ELEMENT;
      else if (e->kind >= MP_HE_IDX && e->kind <= MP_HE_LUDKEY)
	t = ET_PROPERTY;
      else if (e->kind == MP_HE_UPVAL) t = ET_CONTEXT;
      else t = ET_INTERNAL;
      if (t == ET_ELEMENT) {
	name = mp_snap_arg(sn, e);
      } else {
	mp_heapsnap_edge_name(h, k, i, buf, sizeof(buf));
	if ((name = intern(&st, buf, strlen(buf))) == UINT32_MAX) goto out;
      }
      fprintf(out, "%s%u,%llu,%llu", ne++ ? ",\n" : "", t,
	      (unsigned long long)name,
	      (unsigned long long)e->to * NODE_FIELDS);
    }
  fputs("],\n\"trace_function_infos\":[],\"trace_tree\":[],\"samples\":[],"
	"\"locations\":[],\n\"strings\":[", out);
  for (i = 0; i < st.count; i++) {
    if (i) fputs(",\n", out);
    mp_json_cstr(out, st.b + st.off[i]);
  }
  fputs("]}\n", out);
  rc = ferror(out) ? -1 : 0;
out:
  free(ids);
  free(st.b);
  free(st.off);
  mp_hash_free(&st.index);
  return rc;
}
