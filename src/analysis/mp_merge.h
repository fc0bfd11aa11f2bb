/*
** mp_merge.h: several profiles as one, by source: a fleet's workers in
** one report (`ljmemprof report w1.ljm w2.ljm ...`), and each side of a
** diff.
**
** Each profile is read on its own (its symbols resolved in its own
** stream), then added to a merged profile, which has no stream and no
** heap table: its sites, links, stack nodes, owners' records and totals
** are the sums of the profiles'. A source of one profile is the source of
** another when it names the same code, which must not depend on where a
** process happened to put things:
**
**   Lua     the chunk name, the function's first line and the line, as in
**           one profile (mp_loc); an unresolved LFUNC by its address
**   C       a named function by its name and the offset in it (addresses
**           move between processes); a name two functions of one
**           process share (labelled name@0x...), or no name: the address
**   trace   where it started (chunk name and line): trace numbers are per
**           process, so merged traces are labelled "TRACE started at
**           @app.lua:41"; a trace without a symbol: its number
**   the VM  INTERNAL
**
** What is not summed: a merged profile has no time axis (no timeline,
** no time of its peak); its peak is the sum of the profiles' peaks, each
** at its own moment, and so is what each source held then; it says it
** was collected before the end only if every profile says so.
*/

#ifndef MP_MERGE_H
#define MP_MERGE_H

#include "analysis/mp_profile.h"

/* Start a merged profile m (free it with mp_profile_free()). */
void mp_merge_init(mp_profile *m);

/* Add profile s (read to its end, or to an error) to m; its nodes are
** appended to m's, and map (if not NULL, s->nsite entries) gets the site
** in m of each of its sites. Returns 0, or -1 when out of memory (m is
** then partly added to: free it). */
int mp_merge_add(mp_profile *m, const mp_profile *s, uint32_t *map);

/* Where the merge puts location l of a profile: its location in m, whose
** names m->syms.names has (interned from names). 0 when out of memory. */
int mp_merge_loc(mp_profile *m, const mp_strtab *names, const mp_loc *l,
		 mp_loc *out);

#endif
