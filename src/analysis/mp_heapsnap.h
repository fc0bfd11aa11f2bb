/*
** mp_heapsnap.h: what holds what in a heap snapshot.
**
** Over a decoded snapshot (format/mp_snap.h): the shortest path from a
** root to every object (breadth first over strong references, then weak
** ones for what only they reach), the dominator tree of the strong
** references (Cooper, Harvey and Kennedy's iterative algorithm over
** reverse postorder) and each object's retained size (its own and that of
** every object it dominates: what would be freed if it went), the live
** totals by type, and path classes (a path with a big container's keys
** folded to [*]; a table's keys that are objects one class, <key>). Arrays of 4 or 8 bytes per object and per edge: about
** 25 bytes an object besides the snapshot's, and at the peak the
** dominators' predecessor lists (4 an object and an edge) or the path
** classes' two arrays of an object (bench/README.md).
*/

#ifndef MP_HEAPSNAP_H
#define MP_HEAPSNAP_H

#include <stdio.h>
#include <stdint.h>

#include "format/mp_snap.h"

#define MP_HEAPSNAP_NS	3

typedef struct mp_heapsnap {
  const mp_snapshot *sn;
  uint32_t *parent;	/* Edge from the object's path parent, or NONE... */
  uint32_t *up;		/* ...and that parent. */
  uint32_t *depth;	/* Steps from the root (NONE: unreached). */
  uint8_t *weakonly;	/* Reached only through a weak reference. */
  uint32_t *idom;	/* Immediate dominator (the root: 0). */
  uint64_t *retained;
  uint32_t *head;	/* The ancestor at depth 12 of what is deeper than
			   24 (paths skip the steps between), or NULL if
			   nothing is. */
  uint64_t count[MP_HT__MAX], bytes[MP_HT__MAX];	/* Live by type. */
  uint32_t ns[3];	/* Namespaces: not folded (see classes). */
  uint32_t nweak;	/* Objects reached only weakly... */
  uint64_t weakbytes;	/* ...and their bytes. */
} mp_heapsnap;

/* Compute it all. 0, or -1 out of memory. */
int mp_heapsnap_build(mp_heapsnap *h, const mp_snapshot *sn);
void mp_heapsnap_free(mp_heapsnap *h);

/* The name of type t ("table", "Lua function", ...). */
const char *mp_heapsnap_type(unsigned t);

/* The path from a root to object id, into buf (cut to size): e.g.
** package.loaded["app.cache"].items, _G.handler (app.lua:5) <upvalue
** sessions>. fold: keys of containers with more than fold entries become
** [*] (0: none folded). Returns buf. */
char *mp_heapsnap_path(const mp_heapsnap *h, uint32_t id, unsigned fold,
		       char *buf, size_t size);

/* The name of edge k (of object from) as a reference, into buf (cut to size): ".items",
** "[3]", "[\"odd key\"]", "<key>", "<metatable>", "<upvalue sessions>",
** "<local cache in app.lua:3>", "_G" (a root), "<value>" (an upvalue
** object's value). Returns buf. */
char *mp_heapsnap_edge_name(const mp_heapsnap *h, uint32_t k, uint32_t from,
			    char *buf, size_t size);

/* Where Lua function or prototype id was defined, "app.lua:5", into buf;
** "" if unknown. */
char *mp_heapsnap_where(const mp_heapsnap *h, uint32_t id, char *buf,
			size_t size);

/* The top n retainers, by retained size: objects that hold the most, not
** counting one that passes nearly all of it on to a single object it
** dominates (a module table holding one big cache). Fills ids (n of
** them), returns how many, or -1 out of memory. */
int mp_heapsnap_top(const mp_heapsnap *h, uint32_t *ids, uint32_t n);

/* A path class: objects whose folded path is the same. */
typedef struct mp_heapclass {
  char *path;
  uint64_t count, bytes;	/* Objects, and what they retain (not
				   counting members dominated by another
				   member). */
  uint8_t type;		/* The type of its members, or 0 if mixed. */
} mp_heapclass;

/* Path classes of objects whose container has more than fold entries,
** largest first, at most n: into *out (malloc'd array, free each path
** and it). Returns their number, or -1 out of memory. */
int mp_heapsnap_classes(const mp_heapsnap *h, unsigned fold, uint32_t n,
			mp_heapclass **out);

/* The path class of every object, with keys folded as for classes:
** (*cls)[i] the class of object i (MP_SNAP_NONE: the root, or not
** reached), (*rep)[c] an object of class c (its path, folded, names the
** class); both malloc'd. 0, or -1 out of memory. */
int mp_heapsnap_class_map(const mp_heapsnap *h, unsigned fold,
			  uint32_t **cls, uint32_t **rep, uint32_t *nclasses);

/* A node of the dominator tree as shown (mp_heapsnap_domtree). */
typedef struct mp_domnode {
  uint32_t id;		/* The object. */
  uint32_t up;		/* Index of its dominator's node (the root: NONE). */
  uint32_t more;	/* Its children not shown... */
  uint64_t more_bytes;	/* ...and what they retain. */
} mp_domnode;

/* The top of the dominator tree, at most max nodes: from the root, the
** nodes retaining the most first (breadth first, each node's children by
** retained size), at most fan children of a node, none retaining less
** than min bytes; the children left out of each node counted in it.
** Nodes in the order taken (a node after its dominator). Into *out
** (malloc'd); their number, or -1 out of memory. */
int mp_heapsnap_domtree(const mp_heapsnap *h, uint32_t max, uint32_t fan,
			uint64_t min, mp_domnode **out);

#endif
