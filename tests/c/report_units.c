/*
** report_units.c: the report's data structures against simple models: the
** heap table (random puts and takes, colliding addresses, sizes of 4 GiB
** and more, growth), C symbol lookup by nearest lower address with
** redefinitions, and the human-readable sizes. Prints TAP.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mp_heap.h"
#include "render/mp_render.h"
#include "reader/mp_symtab.h"
#include "tap.h"

/* -- Heap ----------------------------------------------------------------- */

#define NADDR	20000

/* Reference model: one slot per address index. */
typedef struct ref {
  uint64_t addr[NADDR];
  uint64_t size[NADDR];
  uint32_t site[NADDR];
  int live[NADDR];
} ref;

static void test_heap(void)
{
  static ref m;
  mp_heap h;
  size_t i, ops = 400000, bad = 0, count = 0;
  uint64_t bytes = 0;
  char first[200] = "";
  mp_heap_init(&h);
  /* Addresses in a few clusters that collide in the table: the same low
  ** bits in different mappings, dense runs, strides of 2^21 and 2^42. */
  for (i = 0; i < NADDR; i++) {
    uint64_t base = (i % 4 == 0) ? 0x7f0000000000ull :
		    (i % 4 == 1) ? 0x7f0000000000ull + (1ull << 24) :
		    (i % 4 == 2) ? 0x560000000000ull : 0x1000;
    m.addr[i] = base + (uint64_t)(i / 4) * ((i % 4 == 3) ? (1ull << 21) : 16);
  }
  for (i = 0; i < ops; i++) {
    size_t k = next() % NADDR;
    uint64_t r = next(), size, gsize = 0;
    uint32_t site = (uint32_t)(r >> 40), gsite = 0;
    int got;
    size = (r & 0xff) == 0 ? 0xffffffffull + (r >> 50) :	/* Big. */
	   (r & 0xff) == 1 ? 0xffffffffull : (r >> 8) % 5000;
    if (r & 0x300) {	/* Put (replacing a block whose free was missed). */
      if (mp_heap_put(&h, m.addr[k], size, site) < 0) abort();
      if (m.live[k]) bytes -= m.size[k]; else count++;
      m.live[k] = 1;
      m.size[k] = size;
      m.site[k] = site;
      bytes += size;
    } else {	/* Take. */
      got = mp_heap_take(&h, m.addr[k], &gsize, &gsite);
      if (got != m.live[k] || (got && (gsize != m.size[k] ||
				       gsite != m.site[k]))) {
	if (!bad++)
	  snprintf(first, sizeof(first), "op %zu take 0x%llx: got %d %llu/%u, "
		   "want %d %llu/%u", i, (unsigned long long)m.addr[k], got,
		   (unsigned long long)gsize, gsite, m.live[k],
		   (unsigned long long)m.size[k], m.site[k]);
      }
      if (m.live[k]) { count--; bytes -= m.size[k]; m.live[k] = 0; }
    }
    if (h.count != count || h.bytes != bytes) {
      if (!bad++)
	snprintf(first, sizeof(first), "op %zu: count %zu bytes %llu, want "
		 "%zu %llu", i, h.count, (unsigned long long)h.bytes, count,
		 (unsigned long long)bytes);
    }
  }
  OK(bad == 0, "heap: 400000 random puts and takes agree with a model",
     "%zu mismatches; first: %s", bad, first);
  /* Everything left can be taken exactly once. */
  for (i = 0, bad = 0; i < NADDR; i++) {
    uint64_t s;
    uint32_t st;
    int got = mp_heap_take(&h, m.addr[i], &s, &st);
    if (got != m.live[i] || (got && s != m.size[i])) bad++;
    if (mp_heap_take(&h, m.addr[i], &s, &st)) bad++;
  }
  OK(bad == 0 && h.count == 0 && h.bytes == 0 &&
     (!h.big || h.big->count == 0),
     "heap: draining leaves it empty, big sizes included",
     "%zu bad, count %zu, bytes %llu", bad, h.count,
     (unsigned long long)h.bytes);
  {
    uint64_t s;
    uint32_t st;
    OK(!mp_heap_take(&h, 0, &s, &st), "heap: address 0 is never found", "%s",
       "found");
  }
  mp_heap_free(&h);
}

/* Blocks at every byte of one page (the most a page table can hold, at
** its largest size), put and taken in scattered orders; then addresses at
** the ends of the address space. */
static void test_heap_pages(void)
{
  mp_heap h;
  uint64_t base = 0x7f0000001000ull, size;
  static const uint64_t edge[] = { 1, 4095, 4096, 0xfffffffffffff000ull,
				   UINT64_MAX - 7, UINT64_MAX };
  uint32_t i, site;
  size_t bad = 0;
  mp_heap_init(&h);
  for (i = 0; i < 4096; i++) {
    uint32_t o = (i * 2654435761u) & 4095;	/* A permutation of 0..4095. */
    if (mp_heap_put(&h, base + o, o + 1, o) < 0) abort();
  }
  OK(h.count == 4096 && h.npage == 1 && h.bytes == 4096ull * 4097 / 2,
     "heap: 4096 blocks at every byte of one page", "count %zu, pages %zu, "
     "bytes %llu", h.count, h.npage, (unsigned long long)h.bytes);
  for (i = 0; i < 4096; i++) {
    uint32_t o = (i * 40503u + 7) & 4095;
    if (!mp_heap_take(&h, base + o, &size, &site) || size != o + 1 ||
	site != o)
      bad++;
  }
  OK(bad == 0 && h.count == 0 && h.npage == 0 && h.bytes == 0,
     "heap: ...taken back in another order, the page's table goes",
     "%zu wrong, count %zu, pages %zu", bad, h.count, h.npage);
  for (i = 0, bad = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
    if (mp_heap_put(&h, edge[i], i + 1, i) < 0) abort();
  for (i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
    if (!mp_heap_take(&h, edge[i], &size, &site) || size != i + 1 ||
	site != i || mp_heap_take(&h, edge[i], &size, &site))
      bad++;
  OK(bad == 0 && h.count == 0, "heap: addresses at the ends of the address "
     "space", "%zu wrong, count %zu", bad, h.count);
  mp_heap_free(&h);
}

/* -- C symbols ------------------------------------------------------------ */

/* Add a C symbol; returns its serial. */
static uint32_t add_c(mp_symtab *t, uint64_t addr, const char *name)
{
  mp_item it;
  memset(&it, 0, sizeof(it));
  it.kind = MP_AEV_SYMTAB;
  it.src = MP_SRC_CFUNC;
  it.id = addr;
  it.name = name;
  it.name_len = strlen(name);
  return mp_symtab_add(t, &it);
}

/* "name+off" of the nearest lower symbol, or "-". */
static const char *floor_name(const mp_symtab *t, uint64_t addr, char *buf,
			      size_t size)
{
  uint64_t off = 0;
  uint32_t i = mp_symtab_cfloor(t, addr, &off);
  size_t len;
  const char *name;
  if (!i) return "-";
  name = mp_symtab_name(t, i, &len);
  snprintf(buf, size, "%.*s+%llu", (int)len, name, (unsigned long long)off);
  return buf;
}

static void test_cfloor(void)
{
  static const char *const names[] = { "n0", "n1", "n2", "n3", "n4", "n5",
				       "n6", "n7", "n8", "n9" };
  mp_symtab t;
  char buf[64];
  size_t i, bad = 0;
  char first[200] = "";
  mp_symtab_init(&t);
  OK(!strcmp(floor_name(&t, 100, buf, sizeof(buf)), "-"),
     "cfloor: empty table finds nothing", "%s", buf);
  add_c(&t, 1000, "a");
  add_c(&t, 3000, "c");
  add_c(&t, 2000, "b");
  OK(!strcmp(floor_name(&t, 999, buf, sizeof(buf)), "-"),
     "cfloor: below the lowest symbol finds nothing", "%s", buf);
  OK(!strcmp(floor_name(&t, 1000, buf, sizeof(buf)), "a+0"),
     "cfloor: exact address", "%s", buf);
  OK(!strcmp(floor_name(&t, 2999, buf, sizeof(buf)), "b+999"),
     "cfloor: inside a symbol", "%s", buf);
  OK(!strcmp(floor_name(&t, UINT64_MAX, buf, sizeof(buf)),
	     "c+18446744073709548615"), "cfloor: above the highest", "%s", buf);
  add_c(&t, 2000, "b2");	/* A library loaded over another. */
  OK(!strcmp(floor_name(&t, 2500, buf, sizeof(buf)), "b2+500"),
     "cfloor: the latest definition at an address wins", "%s", buf);
  mp_symtab_free(&t);

  /* Random symbols against a linear scan, with lookups between adds (so
  ** the sorted runs are seen at every stage of merging). */
  mp_symtab_init(&t);
  {
    static uint64_t addr[5000];
    static uint32_t serial[5000];
    size_t n = 0;
    for (i = 0; i < 5000; i++) {
      size_t j, q;
      addr[n] = (next() % 100000) * 16;
      serial[n] = add_c(&t, addr[n], names[i % 10]);
      n++;
      for (q = 0; q < 3; q++) {
	uint64_t a = next() % 1700000, off = 0;
	uint32_t want = 0, got;
	uint64_t best = 0;
	for (j = 0; j < n; j++)
	  if (addr[j] <= a && (!want || addr[j] >= best)) {
	    best = addr[j];
	    want = serial[j];	/* Later serials win at equal addresses. */
	  }
	got = mp_symtab_cfloor(&t, a, &off);
	if (got != want || (got && off != a - best)) {
	  if (!bad++)
	    snprintf(first, sizeof(first), "after %zu symbols, address %llu: "
		     "serial %u off %llu, want %u off %llu", n,
		     (unsigned long long)a, got, (unsigned long long)off, want,
		     (unsigned long long)(a - best));
	}
      }
    }
  }
  OK(bad == 0, "cfloor: 15000 lookups among up to 5000 symbols agree with a "
     "linear scan", "%zu mismatches; first: %s", bad, first);
  mp_symtab_free(&t);
}

/* -- Sizes ---------------------------------------------------------------- */

static void test_bytes(void)
{
  static const struct { uint64_t n; int human; const char *want; } c[] = {
    { 0, 0, "0B" }, { 3200, 0, "3200B" }, { 0, 1, "0B" },
    { 1023, 1, "1023B" }, { 1024, 1, "1KiB" }, { 1536, 1, "1.50KiB" },
    { 1048570, 1, "1023.99KiB" }, { 1048575, 1, "1.00MiB" },
    { 1048576, 1, "1MiB" },
    { 3758096384ull, 1, "3.50GiB" }, { UINT64_MAX, 1, "16EiB" },
    { UINT64_MAX, 0, "18446744073709551615B" },
  };
  size_t i;
  for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
    char buf[64], name[80];
    mp_fmt_bytes(buf, sizeof(buf), c[i].n, c[i].human);
    snprintf(name, sizeof(name), "%llu bytes%s is %s",
	     (unsigned long long)c[i].n, c[i].human ? " (human)" : "",
	     c[i].want);
    OK(!strcmp(buf, c[i].want), name, "actual: %s", buf);
  }
}

int main(void)
{
  test_heap();
  test_heap_pages();
  test_cfloor();
  test_bytes();
  printf("1..%d\n", n_test);
  return n_fail != 0;
}
