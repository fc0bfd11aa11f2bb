/*
** mp_heapsnapshot.h: a heap snapshot as Chrome DevTools' .heapsnapshot.
**
** The JSON that V8 writes and DevTools' Memory panel loads (its snapshot
** meta, then nodes, edges and strings as flat arrays): a node per object,
** the root object 0 as DevTools' synthetic root; an edge per reference,
** named as our paths name it (.items, [3], <upvalue sessions>, <key>),
** weak references as DevTools' weak edges (which retain nothing there
** either). Node names carry the type and, for a function or prototype,
** where it was defined ("Lua function (app.lua:5)"). DevTools' @id of
** an object comes from its address (mp_heapsnapshot_ids()), so that the
** same object has the same @id in two snapshots of one process and
** DevTools' comparison of the two matches it. docs/REPORT.md says what
** DevTools shows of it.
*/

#ifndef MP_HEAPSNAPSHOT_H
#define MP_HEAPSNAPSHOT_H

#include <stdio.h>

#include "analysis/mp_heapsnap.h"

/* DevTools' @id of every object of sn into ids (sn->n of them): odd, as
** V8 gives objects, and 32-bit, as DevTools keeps them: 2a + 1 where a
** is bits 3 to 33 of the address (the root: 1). Returns 1; or 0 if two
** objects would share one (objects 2^34 bytes apart: then 2i + 1 for
** object number i, which matches nothing across snapshots); -1 out of
** memory. */
int mp_heapsnapshot_ids(const mp_snapshot *sn, uint32_t *ids);

/* Write h as a .heapsnapshot to out; *numbered says whether the @ids are
** numbers (mp_heapsnapshot_ids() returned 0). 0, or -1 out of memory or
** when writing failed (ferror(out) then says which). */
int mp_heapsnapshot_write(FILE *out, const mp_heapsnap *h, int *numbered);

#endif
