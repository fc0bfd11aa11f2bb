/*
** format_uleb.c: the fast ULEB128 encoders (mp_put_uleb_fast and
** mp_put_uleb_near) write exactly the bytes of the simple one, and all
** decode back, for edge values and 10^6 random ones.
** Prints TAP.
*/

#include <stdio.h>
#include <string.h>

#include "format/mp_format.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* xorshift64*, with a random bit length so every length is exercised. */
static uint64_t next(void)
{
  uint64_t x;
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  x = rng * 2685821657736338717ull;
  return x >> (x & 63);
}

/* Decode one ULEB128 (test oracle, independent of the reader). */
static uint64_t decode(const uint8_t *p, size_t *len)
{
  uint64_t v = 0;
  unsigned shift = 0;
  size_t i = 0;
  for (;;) {
    uint8_t b = p[i++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
  }
  *len = i;
  return v;
}

static int check(uint64_t v, int *n_test)
{
  uint8_t a[16], b[16], c[16];
  size_t la, lb, lc, ld, le;
  memset(a, 0xee, sizeof(a));
  memset(b, 0xee, sizeof(b));
  memset(c, 0xee, sizeof(c));
  la = (size_t)(mp_put_uleb(a, v) - a);
  lb = (size_t)(mp_put_uleb_fast(b, v) - b);
  lc = (size_t)(mp_put_uleb_near(c, v) - c);
  (*n_test)++;
  if (la != lb || la != lc || memcmp(a, b, la) != 0 || memcmp(a, c, la) != 0 ||
      decode(b, &ld) != v || ld != lb || decode(c, &le) != v || le != lc) {
    printf("not ok %d - value 0x%llx: simple %zu bytes, fast %zu bytes, "
	   "near %zu bytes\n", *n_test, (unsigned long long)v, la, lb, lc);
    return 1;
  }
  return 0;
}

int main(void)
{
  static const uint64_t edges[] = {
    0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1fffff, 0x200000, 0xfffffff,
    0x10000000, 0x7ffffffff, 0x800000000, 0x3ffffffffffull,
    0x40000000000ull, 0x1ffffffffffffull, 0x2000000000000ull,
    0x7f0000001234ull, 0xffffffffffffffull, 0x100000000000000ull,
    0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull
  };
  int n = 0, failed = 0, i;
  for (i = 0; i < (int)(sizeof(edges) / sizeof(edges[0])); i++) {
    failed += check(edges[i], &n);
    if (!failed) printf("ok %d - value 0x%llx\n", n, (unsigned long long)edges[i]);
  }
  {
    int bad = 0, k = 0;
    for (i = 0; i < 1000000; i++) bad += check(next(), &k);
    n++;
    printf("%s %d - 10^6 random values of every length\n", bad ? "not ok" : "ok", n);
    failed += bad;
  }
  printf("1..%d\n", n);
  return failed != 0;
}
