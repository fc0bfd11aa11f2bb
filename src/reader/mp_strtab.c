/*
** mp_strtab.c: interned names in blocks of storage (see mp_strtab.h).
**
** Names are packed into blocks of 64 KiB or more, handed out in order and
** freed together: one malloc per block instead of one per name, and no
** copy when the table grows.
*/

#include <stdlib.h>
#include <string.h>

#include "reader/mp_strtab.h"
#include "util/mp_array.h"

#define BLOCK_MIN	((size_t)64 << 10)
#define BLOCK_MAX	((size_t)16 << 20)	/* Blocks double up to this. */

/* A block of storage for names. */
typedef struct mp_strblock {
  struct mp_strblock *next;
  size_t used, cap;
  char data[];
} mp_strblock;

void mp_strtab_init(mp_strtab *t)
{
  memset(t, 0, sizeof(*t));
  mp_hash_init_map(&t->map);
  mp_hash_init_map(&t->lline);
  mp_hash_init_map(&t->fname);
}

void mp_strtab_free(mp_strtab *t)
{
  mp_strblock *b = t->block;
  while (b) {
    mp_strblock *next = b->next;
    free(b);
    b = next;
  }
  free(t->name);
  free(t->alias);
  mp_hash_free(&t->map);
  mp_hash_free(&t->lline);
  mp_hash_free(&t->fname);
  memset(t, 0, sizeof(*t));
}

/* Room for n bytes in the storage; NULL when out of memory. */
static char *store(mp_strtab *t, size_t n)
{
  mp_strblock *b = t->block;
  char *p;
  if (!b || b->cap - b->used < n) {
    size_t cap = b && b->cap < BLOCK_MAX ? b->cap * 2 : b ? BLOCK_MAX :
		 BLOCK_MIN;
    if (cap < n) cap = n;
    if (!(b = malloc(sizeof(*b) + cap))) return NULL;
    b->used = 0;
    b->cap = cap;
    b->next = t->block;
    t->block = b;
  }
  p = b->data + b->used;
  b->used += n;
  t->bytes += n;
  return p;
}

uint32_t mp_strtab_intern(mp_strtab *t, const char *s, uint64_t len)
{
  uint32_t kept = (uint32_t)(len < MP_NAME_KEEP ? len : MP_NAME_KEEP), i;
  uint64_t h = mp_hash_bytes(s, kept) ^ mp_hash_mix(len);
  mp_hash_iter it;
  uint32_t *v;
  mp_name *nm;
  char *p;
  for (v = mp_hash_first(&t->map, h, &it); v; v = mp_hash_next(&t->map, &it)) {
    nm = &t->name[*v];
    if (nm->len == len && nm->kept == kept && !memcmp(nm->s, s, kept))
      return *v;
  }
  if (!t->n) t->n = 1;	/* Id 0 means no name. */
  if (mp_array_grow((void **)&t->name, t->n, &t->cap, sizeof(*t->name)) < 0 ||
      mp_hash_reserve(&t->map, 1) < 0 || !(p = store(t, kept ? kept : 1)))
    return 0;
  memcpy(p, s, kept);
  i = t->n++;
  nm = &t->name[i];
  nm->s = p;
  nm->len = len;
  nm->kept = kept;
  nm->alias = 0;
  nm->caddr = 0;
  nm->cshared = 0;
  mp_hash_insert(&t->map, h, i);	/* Cannot fail: room reserved. */
  return i;
}

const char *mp_strtab_copy(mp_strtab *t, const char *s, size_t n)
{
  char *p = store(t, n ? n : 1);
  if (p) memcpy(p, s, n);
  return p;
}

/* Non-zero if the len bytes at s have a control character (C0 or DEL). */
static int has_control(const char *s, size_t len)
{
  size_t i;
  for (i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f) return 1;
  return 0;
}

int mp_name_is_text(const char *s, size_t len)
{
  if (len == 0) return 0;
  if (s[0] != '@' && s[0] != '=')
    return len > MP_STRING_CHUNK_MAX || has_control(s, len);
  return memchr(s, '\n', len) != NULL;
}

int mp_name_is_string(const char *s, size_t len)
{
  if (len == 0) return 1;
  return s[0] != '@' && s[0] != '=' && !mp_name_is_text(s, len);
}

/* The key of line of chunk in lline: exact, as Lua lines fit in 32 bits
** (LuaJIT's BCLine). */
static uint64_t line_key(uint32_t chunk, uint64_t line)
{
  return (uint64_t)chunk << 32 | (line & 0xffffffffu);
}

int mp_strtab_lua_line(mp_strtab *t, uint32_t chunk, uint64_t line,
		       uint64_t fline)
{
  uint64_t k = line_key(chunk, line);
  uint32_t *v = mp_hash_get(&t->lline, k);
  if (!v) return mp_hash_put(&t->lline, k, (uint32_t)fline + 1) < 0 ? -1 : 0;
  if (*v != (uint32_t)fline + 1) *v = 0;
  return 0;
}

int mp_strtab_line_shared(const mp_strtab *t, uint32_t chunk, uint64_t line)
{
  uint32_t *v = mp_hash_get(&t->lline, line_key(chunk, line));
  return v && !*v;
}

int mp_strtab_fname_set(mp_strtab *t, uint32_t chunk, uint64_t fline,
			const char *name, uint64_t len)
{
  uint64_t k = line_key(chunk, fline);
  uint32_t id = mp_strtab_intern(t, name, len), *v;
  if (!id) return -1;
  if ((v = mp_hash_get(&t->fname, k)) != NULL) {
    if (*v != id) *v = 0;	/* Two names for one function: neither. */
    return 0;
  }
  return mp_hash_put(&t->fname, k, id) < 0 ? -1 : 0;
}

uint32_t mp_strtab_fname(const mp_strtab *t, uint32_t chunk, uint64_t fline)
{
  const uint32_t *v = t->fname.count ? mp_hash_get(&t->fname,
						    line_key(chunk, fline))
				     : NULL;
  return v ? *v : 0;
}

uint32_t mp_strtab_alias(mp_strtab *t, uint32_t i)
{
  mp_name *nm = &t->name[i];
  if (nm->alias) return nm->alias;
  if (!t->nalias) t->nalias = 1;	/* Numbers start at 1. */
  if (mp_array_grow((void **)&t->alias, t->nalias, &t->capalias,
		    sizeof(*t->alias)) < 0)
    return 0;
  t->alias[t->nalias] = i;
  return nm->alias = t->nalias++;
}
