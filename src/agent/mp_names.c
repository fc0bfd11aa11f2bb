/*
** mp_names.c: Lua names of the C functions registered in loaded modules.
**
** C functions of the standard library live inside the luajit binary or
** libluajit, mostly without a dynamic symbol; "luajit+0x92c0" is true but
** unhelpful when the user wrote `require`. At start (outside the hook, where
** the Lua API may be used), the tables in package.loaded are walked once
** and every C function found gets its Lua name ("require",
** "package.seeall", "cjson.encode"). The hook looks a name up only the
** first time it meets a C function.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"

#include "mp_agent.h"

/* Order entries by function address. */
static int by_addr(const void *a, const void *b)
{
  uintptr_t x = (uintptr_t)((const mp_name *)a)->f;
  uintptr_t y = (uintptr_t)((const mp_name *)b)->f;
  return x < y ? -1 : x > y;
}

/* Add name "prefix.key" (or "key" for _G) for function f. */
static int add(mp_names *t, const void *f, const char *prefix, const char *key)
{
  size_t np = prefix ? strlen(prefix) + 1 : 0, nk = strlen(key);
  char *name;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    mp_name *e = realloc(t->e, cap * sizeof(*e));
    if (!e) return -1;
    t->e = e;
    t->cap = cap;
  }
  if (!(name = malloc(np + nk + 1))) return -1;
  if (prefix) {
    memcpy(name, prefix, np - 1);
    name[np - 1] = '.';
  }
  memcpy(name + np, key, nk + 1);
  t->e[t->n].f = f;
  t->e[t->n].name = name;
  t->n++;
  return 0;
}

/* Add the C functions of the table on top of the stack, named under
** prefix; descend one level into tables under string keys (for example
** package.loaders[2]). Returns -1 when out of memory. */
static int walk(mp_names *t, lua_State *L, const char *prefix, int depth)
{
  char sub[256];
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    const char *key = NULL;
    char num[32];
    if (lua_type(L, -2) == LUA_TSTRING) {
      key = lua_tostring(L, -2);
    } else if (lua_type(L, -2) == LUA_TNUMBER && prefix) {
      snprintf(num, sizeof(num), "[%d]", (int)lua_tonumber(L, -2));
      key = num;
    }
    if (key && lua_iscfunction(L, -1)) {
      lua_CFunction f = lua_tocfunction(L, -1);
      if (f) {
	int brk = key == num;
	if (brk && prefix) snprintf(sub, sizeof(sub), "%s%s", prefix, key);
	if (add(t, (const void *)f, brk ? NULL : prefix, brk ? sub : key) < 0) {
	  lua_pop(L, 2);
	  return -1;
	}
      }
    } else if (key && key != num && depth > 0 && lua_istable(L, -1)) {
      if (prefix) snprintf(sub, sizeof(sub), "%s.%s", prefix, key);
      else snprintf(sub, sizeof(sub), "%s", key);
      if (walk(t, L, sub, depth - 1) < 0) { lua_pop(L, 2); return -1; }
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* Walk package.loaded: _G first (its functions get bare names), then
** every module under its name. A function under several names is found
** by any of them. */
void mp_names_build(mp_names *t, lua_State *L)
{
  int top = lua_gettop(L);
  memset(t, 0, sizeof(*t));
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "_G");
    if (lua_istable(L, -1) && walk(t, L, NULL, 0) < 0) goto done;
    lua_pop(L, 1);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1) &&
	  strcmp(lua_tostring(L, -2), "_G") != 0 &&
	  walk(t, L, lua_tostring(L, -2), 1) < 0)
	goto done;
      lua_pop(L, 1);
    }
  }
done:
  lua_settop(L, top);
  if (t->n) qsort(t->e, t->n, sizeof(*t->e), by_addr);
}

/* Lua name of C function f, or NULL. Among equal addresses, any. */
const char *mp_names_find(const mp_names *t, const void *f)
{
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)t->e[mid].f < (uintptr_t)f) lo = mid + 1;
    else hi = mid;
  }
  return lo < t->n && t->e[lo].f == f ? t->e[lo].name : NULL;
}

/* Free the names table. */
void mp_names_free(mp_names *t)
{
  size_t i;
  for (i = 0; i < t->n; i++) free(t->e[i].name);
  free(t->e);
  memset(t, 0, sizeof(*t));
}
