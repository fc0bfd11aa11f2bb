/*
** mp_tab.h: a table's value under a string key, read as the VM reads it
** (LuaJIT's own lj_tab_getstr() is not exported by its library), for the
** agent's reads of tables it may not change: the globals, a metatable's
** metamethods.
*/

#ifndef MP_TAB_H
#define MP_TAB_H

#include "lj_obj.h"
#include "lj_tab.h"

/* The value of interned string key in table t, or NULL. */
static inline const TValue *mp_tab_str(const GCtab *t, const GCstr *key)
{
  const Node *n;
  if (!t || !t->hmask) return NULL;
  n = hashstr(t, key);
  do {
    if (tvisstr(&n->key) && strV(&n->key) == key) return &n->val;
  } while ((n = nextnode(n)));
  return NULL;
}

#endif
