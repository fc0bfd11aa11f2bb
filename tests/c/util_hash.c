/*
** util_hash.c: the one hash table (src/util/mp_hash.h) against simple
** models: a set and a map of exact keys under random insertions and
** deletions (key 0, keys that share home slots, growth from a zeroed
** table), records that share a hash, and room reserved ahead. Prints TAP.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mp_hash.h"
#include "tap.h"

#define NKEY	5000

/* Keys that collide: 0, small integers, pointers 16 bytes apart, and
** values that differ only above the bits the home slot uses. */
static uint64_t key_of(size_t i)
{
  switch (i % 4) {
  case 0: return i / 4;
  case 1: return 0x7f0000000000ull + (i / 4) * 16;
  case 2: return (uint64_t)(i / 4 + 1) << 48;
  default: return ~(uint64_t)(i / 4);
  }
}

/* mp_hash_each's visitor: counts keys and sums two mixes of them. */
struct visit { size_t n; uint64_t sum, mix; };
static void visit(void *ud, uint64_t key)
{
  struct visit *v = ud;
  v->n++;
  v->sum += key;
  v->mix += mp_hash_mix(key);
}

/* A set and a map under 300000 random operations agree with arrays. */
static void test_exact(void)
{
  static uint8_t in[NKEY];
  static uint32_t want[NKEY];
  mp_hash set, map;
  size_t i, bad = 0, count = 0;
  char first[200] = "";
  memset(&set, 0, sizeof(set));
  memset(&map, 0, sizeof(map));
  for (i = 0; i < 300000; i++) {
    size_t k = next() % NKEY;
    uint64_t key = key_of(k), r = next();
    int got, exp;
    uint32_t *v;
    if (r & 1) {	/* Insert into both. */
      uint32_t val = (uint32_t)(r >> 32);
      got = mp_hash_add(&set, key);
      exp = !in[k];
      if (got != exp && !bad++)
	snprintf(first, sizeof(first), "op %zu add %llx: %d, want %d", i,
		 (unsigned long long)key, got, exp);
      got = mp_hash_put(&map, key, val);
      if (got != exp && !bad++)
	snprintf(first, sizeof(first), "op %zu put %llx: %d, want %d", i,
		 (unsigned long long)key, got, exp);
      if (!in[k]) count++;
      in[k] = 1;
      want[k] = val;
    } else if (r & 2) {	/* Delete from both (taking the map's value). */
      uint32_t tv = 0xdeadbeef;
      got = mp_hash_del(&set, key) * 2;
      if (r & 4) {
	got += mp_hash_take(&map, key, &tv);
	if (tv != (in[k] ? want[k] : 0xdeadbeef) && !bad++)
	  snprintf(first, sizeof(first), "op %zu take %llx: value %u, want %u",
		   i, (unsigned long long)key, tv, in[k] ? want[k] : 0xdeadbeef);
      } else {
	got += mp_hash_del(&map, key);
      }
      exp = in[k] ? 3 : 0;
      if (got != exp && !bad++)
	snprintf(first, sizeof(first), "op %zu del %llx: %d, want %d", i,
		 (unsigned long long)key, got, exp);
      if (in[k]) count--;
      in[k] = 0;
    }
    /* Look up a random key in both. */
    k = next() % NKEY;
    key = key_of(k);
    v = mp_hash_get(&map, key);
    if (mp_hash_has(&set, key) != in[k] || mp_hash_has(&map, key) != in[k] ||
	(v != NULL) != in[k] || (v && *v != want[k])) {
      if (!bad++)
	snprintf(first, sizeof(first), "op %zu lookup %llx: has %d/%d, value "
		 "%s %u, want %d %u", i, (unsigned long long)key,
		 mp_hash_has(&set, key), mp_hash_has(&map, key),
		 v ? "present" : "absent", v ? *v : 0, in[k], want[k]);
    }
    if ((set.count != count || map.count != count) && !bad++)
      snprintf(first, sizeof(first), "op %zu: counts %zu/%zu, want %zu", i,
	       set.count, map.count, count);
  }
  OK(bad == 0, "set and map of exact keys: 300000 random operations agree "
     "with a model", "%zu mismatches; first: %s", bad, first);
  {
    struct visit want_v = { 0, 0, 0 }, s_v = { 0, 0, 0 }, m_v = { 0, 0, 0 };
    for (i = 0; i < NKEY; i++)
      if (in[i]) visit(&want_v, key_of(i));
    mp_hash_each(&set, visit, &s_v);
    mp_hash_each(&map, visit, &m_v);
    OK(want_v.n > 1000 && in[0] &&
       !memcmp(&s_v, &want_v, sizeof(want_v)) &&
       !memcmp(&m_v, &want_v, sizeof(want_v)),
       "each visits every key once (key 0 included)", "%zu/%zu keys, want %zu",
       s_v.n, m_v.n, want_v.n);
  }
  for (i = 0, bad = 0; i < NKEY; i++) {
    if (mp_hash_del(&set, key_of(i)) != in[i]) bad++;
    if (mp_hash_del(&map, key_of(i)) != in[i]) bad++;
  }
  OK(bad == 0 && set.count == 0 && map.count == 0 && !mp_hash_has(&set, 0),
     "deleting every key empties both", "%zu bad, counts %zu %zu", bad,
     set.count, map.count);
  mp_hash_free(&set);
  mp_hash_free(&map);
  OK(set.key == NULL && set.count == 0 && mp_hash_add(&set, 7) == 1 &&
     mp_hash_has(&set, 7), "a freed table is empty and usable again", "%s",
     "not usable");
  mp_hash_free(&set);
}

/* Records: many share one hash; each is found among the candidates and
** removed alone. */
static void test_records(void)
{
  enum { N = 3000 };
  static uint8_t live[N];
  mp_hash t;
  size_t i, bad = 0;
  memset(&t, 0, sizeof(t));
  for (i = 0; i < N; i++) {	/* Hash i % 7: runs of ~430 candidates. */
    if (mp_hash_insert(&t, 10 + i % 7, (uint32_t)i) < 0) abort();
    live[i] = 1;
  }
  for (i = 0; i < N; i += 3) {
    if (mp_hash_remove(&t, 10 + i % 7, (uint32_t)i) != 1) bad++;
    if (mp_hash_remove(&t, 10 + i % 7, (uint32_t)i) != 0) bad++;
    live[i] = 0;
  }
  for (i = 0; i < N; i++) {
    mp_hash_iter it;
    uint32_t *v;
    size_t n = 0, want = 0, j, seen = 0;
    for (j = i % 7; j < N; j += 7) want += live[j];
    for (v = mp_hash_first(&t, 10 + i % 7, &it); v; v = mp_hash_next(&t, &it)) {
      if (*v % 7 != i % 7 || !live[*v]) bad++;	/* Only live candidates. */
      seen += *v == i;
      n++;
    }
    if (seen != live[i] || n != want) bad++;
  }
  OK(bad == 0 && t.count == N - (N + 2) / 3, "records sharing a hash: each "
     "found among its candidates, removed alone", "%zu bad, count %zu", bad,
     t.count);
  mp_hash_free(&t);
  memset(&t, 0, sizeof(t));
  OK(mp_hash_insert(&t, 0, 5) == 0 && mp_hash_insert(&t, 0, 6) == 0 &&
     t.count == 2 && mp_hash_remove(&t, 0, 6) == 1 &&
     *mp_hash_first(&t, 0, &(mp_hash_iter){0, 0}) == 5,
     "records whose hash is 0", "count %zu", t.count);
  mp_hash_free(&t);
}

/* reserve(n) makes room: n insertions then move nothing. */
static void test_reserve(void)
{
  mp_hash t;
  uint64_t *slots;
  size_t i;
  int same = 1;
  mp_hash_init_map(&t);
  if (mp_hash_reserve(&t, 1000) < 0) abort();
  slots = t.key;
  for (i = 1; i <= 1000; i++) {
    if (mp_hash_put(&t, i * 0x1000, (uint32_t)i) != 1) same = 0;
    if (t.key != slots) same = 0;
  }
  OK(same && t.count == 1000 && *mp_hash_get(&t, 0x1000 * 500) == 500,
     "1000 insertions after reserve(1000) keep the same slots", "count %zu",
     t.count);
  mp_hash_free(&t);
}

int main(void)
{
  test_exact();
  test_records();
  test_reserve();
  printf("1..%d\n", n_test);
  return n_fail != 0;
}
