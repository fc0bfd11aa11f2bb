/*
** report_cut.c: usage: report_cut FILE
**
** Cuts the complete profile FILE at every byte offset (for big files: every
** offset in the last 4 KiB and every 499th before) and runs each prefix
** through the profile pass and the renderers, in process. Each prefix must
** read as truncated at an offset within it, hold the same sites as the
** whole profile in the same order (a prefix of them) with no counter
** above the whole profile's, and render. Prints "ok ..." or "not ok ...".
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/mp_input.h"
#include "analysis/mp_profile.h"
#include "render/mp_render.h"

/* Check prefix p against the whole profile w; NULL or what is wrong. */
static const char *compare(const mp_profile *p, const mp_profile *w)
{
  uint32_t i;
  int k;
  if (p->nsite > w->nsite) return "more sites than the whole profile";
  for (i = 0; i < p->nsite; i++) {
    const mp_site *a = &p->site[i], *b = &w->site[i];
    if (!mp_loc_same(&a->loc, &b->loc) || a->loc.id != b->loc.id)
      return "a site differs from the whole profile's";
    for (k = 1; k < MP_AEV_N; k++)
      if (a->n[k] > b->n[k] || a->plus[k] > b->plus[k] ||
	  a->minus[k] > b->minus[k])
	return "a site counts more than in the whole profile";
  }
  for (k = 1; k < MP_AEV_N; k++)
    if (p->total[k].n > w->total[k].n)
      return "more events than the whole profile";
  if (p->nlink > w->nlink) return "more links than the whole profile";
  return NULL;
}

int main(int argc, char **argv)
{
  mp_input f;
  mp_profile whole;
  size_t len, step, tested = 0;
  uint64_t last_events = 0;
  if (argc != 2 || mp_input_open(&f, argv[1]) < 0 || !f.data) {
    printf("not ok - cannot read %s\n", argc > 1 ? argv[1] : "(no file)");
    return 1;
  }
  mp_profile_init(&whole);
  if (mp_profile_read(&whole, f.data, f.len) != MP_END) {
    printf("not ok - %s is not a complete profile\n", argv[1]);
    return 1;
  }
  step = f.len > 65536 ? 499 : 1;
  for (len = 0; len < f.len; len += (len + 4096 >= f.len) ? 1 : step) {
    uint8_t *copy = malloc(len ? len : 1);	/* Exact size, for ASan. */
    mp_profile p;
    mp_sections sec;
    mp_render_opts o;
    const char *why = NULL;
    uint64_t events;
    FILE *null = fopen("/dev/null", "w");
    int rc;
    memcpy(copy, f.data, len);
    mp_profile_init(&p);
    rc = mp_profile_read(&p, copy, len);
    events = p.total[MP_AEV_ALLOC].n + p.total[MP_AEV_FREE].n +
	     p.total[MP_AEV_REALLOC].n;
    if (rc != MP_ERR_TRUNC) why = "not read as truncated";
    else if (p.r.err_offset > len) why = "truncation offset past the cut";
    else if (events < last_events) why = "fewer events than a shorter prefix";
    else why = compare(&p, &whole);
    memset(&o, 0, sizeof(o));
    if (!why && mp_sections_build(&sec, &p, MP_SORT_BYTES) == 0) {
      if (mp_render_text(null, &sec, &o) < 0 ||
	  mp_render_json(null, &sec, &o) < 0)
	why = "rendering failed";
      mp_sections_free(&sec);
    } else if (!why) {
      why = "report build failed";
    }
    fclose(null);
    if (why) {
      printf("not ok - prefix of %zu bytes: %s (rc %d, offset %zu: %s)\n",
	     len, why, rc, p.r.err_offset, p.r.err);
      return 1;
    }
    last_events = events;
    mp_profile_free(&p);
    free(copy);
    tested++;
  }
  printf("ok - %zu prefixes of %zu bytes\n", tested, f.len);
  mp_profile_free(&whole);
  mp_input_close(&f);
  return 0;
}
