/*
** mp_heapsnapshot.h: a heap snapshot as Chrome DevTools' .heapsnapshot.
**
** The JSON that V8 writes and DevTools' Memory panel loads (its snapshot
** meta, then nodes, edges and strings as flat arrays): a node per object,
** the root object 0 as DevTools' synthetic root; an edge per reference,
** named as our paths name it (.items, [3], <upvalue sessions>, <key>),
** weak references as DevTools' weak edges (which retain nothing there
** either). Node names carry the type and, for a function or prototype,
** where it was defined ("Lua function (app.lua:5)"); DevTools' @id of
** object number i is 2i + 1 (V8 gives objects odd ids). docs/REPORT.md
** says what DevTools shows of it.
*/

#ifndef MP_HEAPSNAPSHOT_H
#define MP_HEAPSNAPSHOT_H

#include <stdio.h>

#include "analysis/mp_heapsnap.h"

/* Write h as a .heapsnapshot to out. 0, or -1 out of memory or when
** writing failed (ferror(out) then says which). */
int mp_heapsnapshot_write(FILE *out, const mp_heapsnap *h);

#endif
