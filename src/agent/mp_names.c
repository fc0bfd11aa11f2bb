/*
** mp_names.c: Lua names of the C functions a program can reach.
**
** C functions of the standard library and of C modules live in the luajit
** binary, libluajit or a module's .so, mostly without a dynamic symbol;
** "luajit+0x92c0" is true but unhelpful when the user wrote `require`. So
** the agent collects the Lua names of C functions, outside the hook where
** the Lua API may be used: at start, from the globals (two levels of
** tables down: vim.api.nvim_buf_get_lines), from every module in
** package.loaded (one level down) and from the metatables kept in the
** registry under their type names (lpeg-pattern.__mul); and for modules
** required later, from the module the first `require` of each name returns
** and from the registry's new tables (the agent puts a wrapper in
** _G.require while it records, see mp_names_require()). The hook looks a
** name up only the first time it meets a C function.
**
** A function is often reachable under several names (Neovim's API under
** vim.api, vim._editor.api and vim.shared.api); the label must not depend
** on the order of a table walk, so it is chosen by rule: a name in the
** standard library first (table.insert, not penlight's pl.List.push),
** then the fewest components, then the shortest, then the first in byte
** order. A C function
** shared by several names in one table (Neovim registers one loader for
** every package.preload entry) is labelled by that table: "t.{a,b}" for
** two or three names, "t.*" for more.
**
** Builtins (fast functions) are named by their ffid from a table generated
** at build time from the LuaJIT source the agent is compiled against
** (scripts/gen-ffnames.pl: table.new, ffi.meta.__add, string.gmatch
** iterator, whether a table reaches them or not), checked at load time
** against the library tables of the running VM; the walk names them only
** when that check fails.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lj_obj.h"
#include "lj_bc.h"
#include "lj_debug.h"
#include "lua.h"
#include "lauxlib.h"

#include "mp_agent.h"
#include "mp_proc.h"
#include "mp_frame.h"
#include "mp_names.h"
#include "mp_sym.h"
#include "mp_ffnames.h"	/* Generated: mp_ffnames[ffid]. */

#define NAME_MAX_LEN	255	/* Longer names are not collected. */
#define NFF	(sizeof(mp_ffnames) / sizeof(mp_ffnames[0]))

/* Whether mp_ffnames agrees with the running VM's tables (mp_names_check():
** the same for every VM of the process, which has one LuaJIT). */
static int ff_ok;
/* The C function of the iterators io.lines and file:lines return (a C
** closure no table reaches). */
static const void *lines_iter;

/* Is name (with top-level component before its first '.', '[' or ':') one
** of the standard library's? */
static int std_name(const char *name)
{
  static const char *const libs[] = {
    "string", "table", "math", "io", "os", "bit", "jit", "coroutine",
    "debug", "package", "ffi", "require", "module", NULL
  };
  size_t n = strcspn(name, ".[:");
  int i;
  for (i = 0; libs[i]; i++)
    if (strlen(libs[i]) == n && !memcmp(libs[i], name, n)) return 1;
  return 0;
}

/* Order candidates by function, then by rank (see the file header). */
static int by_rank(const void *a, const void *b)
{
  const mp_name *x = a, *y = b;
  size_t nx, ny;
  if (x->f != y->f) return (uintptr_t)x->f < (uintptr_t)y->f ? -1 : 1;
  if (x->std != y->std) return x->std ? -1 : 1;
  if (x->parts != y->parts) return x->parts < y->parts ? -1 : 1;
  nx = strlen(x->name);
  ny = strlen(y->name);
  if (nx != ny) return nx < ny ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Add candidate name for function f; parent is the length of the name of
** the table holding it (0 for a global), parts its number of components.
** Returns -1 when out of memory. */
static int add(mp_names *t, const void *f, const char *name, size_t parent,
	       unsigned parts)
{
  size_t len = strlen(name) + 1;
  char *copy;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    mp_name *e = realloc(t->e, cap * sizeof(*e));
    if (!e) return -1;
    t->e = e;
    t->cap = cap;
  }
  /* Not strdup(): libc's call of malloc is one --native records, billed
  ** to the Lua line that required the module. */
  if (!(copy = malloc(len))) return -1;
  memcpy(copy, name, len);
  t->e[t->n].f = f;
  t->e[t->n].name = copy;
  t->e[t->n].parent = (uint16_t)parent;
  t->e[t->n].parts = (uint16_t)parts;
  t->e[t->n].std = (uint8_t)std_name(name);
  t->e[t->n].cl = NULL;
  t->n++;
  t->sorted = 0;
  return 0;
}

/* Add the C functions of the table on top of the stack, whose name is
** prefix (NULL for the globals, with `parts` components), descending
** `depth` more levels into tables under string keys; entries under integer
** keys get "prefix[i]" (package.loaders[2]). Tables already on the path
** are not entered again. Returns -1 when out of memory. */
static int walk(mp_names *t, mp_names *bt, mp_names *lt, lua_State *L,
		const char *prefix, unsigned parts, int depth)
{
  char name[NAME_MAX_LEN + 1];
  size_t np = prefix ? strlen(prefix) : 0;
  int rc = 0;
  if (!lua_checkstack(L, 4)) return 0;
  lua_pushnil(L);
  while (rc == 0 && lua_next(L, -2)) {
    int n = -1;
    if (lua_type(L, -2) == LUA_TSTRING) {
      const char *key = lua_tostring(L, -2);
      n = prefix ? snprintf(name, sizeof(name), "%s.%s", prefix, key)
		 : snprintf(name, sizeof(name), "%s", key);
    } else if (lua_type(L, -2) == LUA_TNUMBER && prefix) {
      n = snprintf(name, sizeof(name), "%s[%.14g]", prefix,
		   lua_tonumber(L, -2));
    }
    if (n > 0 && n <= NAME_MAX_LEN) {
      if (lua_isfunction(L, -1)) {
	const GCfunc *fn = (const GCfunc *)lua_topointer(L, -1);
	if (fn->c.ffid > FF_C)	/* A builtin: named by its ffid. */
	  rc = add(bt, (const void *)(uintptr_t)fn->c.ffid, name, np, parts + 1);
	else if (iscfunc(fn) && fn->c.f &&
		 (rc = add(t, (const void *)fn->c.f, name, np, parts + 1)) == 0)
	  t->e[t->n - 1].cl = fn;	/* Which closure: cjson.safe's. */
	else if (isluafunc(fn) && funcproto(fn)->firstline == ~(BCLine)0)
	  rc = add(bt, funcproto(fn), name, np, parts + 1);	/* In Lua. */
	else if (isluafunc(fn) && lt &&
		 (rc = add(lt, funcproto(fn), name, np, parts + 1)) == 0) {
	  /* The prototype's chunk and line: the same prototype still. */
	  lt->e[lt->n - 1].cl = proto_chunkname(funcproto(fn));
	  lt->e[lt->n - 1].line = funcproto(fn)->firstline;
	}
      } else if (depth > 0 && lua_type(L, -2) == LUA_TSTRING &&
		 lua_istable(L, -1) && lua_topointer(L, -1) !=
		 lua_topointer(L, -3)) {
	rc = walk(t, bt, lt, L, name, parts + 1, depth - 1);
      }
    }
    lua_pop(L, 1);
  }
  if (rc) lua_pop(L, 1);	/* The key left by the break: the table stays, as
			   at the end of the loop (a caller pops it). */
  return rc;
}

static int same_table(const mp_name *c, const mp_name *best);
static size_t same_names(const mp_names *t, size_t lo);

/* Sort the candidates by function and rank, once after additions, and
** find the C functions that two or three names of one table share. */
static void sort(mp_names *t)
{
  size_t i, j;
  if (t->sorted) return;
  if (t->n) qsort(t->e, t->n, sizeof(*t->e), by_rank);
  t->sorted = 1;
  mp_hash_free(&t->shared);
  for (i = 0; i < t->n; i = j) {
    size_t same = same_names(t, i);
    for (j = i + 1; j < t->n && t->e[j].f == t->e[i].f; j++) ;
    if (same >= 1 && same <= 2)
      mp_hash_add(&t->shared, (uintptr_t)t->e[i].f);	/* OOM: unsplit. */
  }
}

/* Whether module name was walked before; if not, it is from now on. */
static int module_seen(mp_names *t, const char *name)
{
  return mp_hash_add(&t->modules, mp_hash_bytes(name, strlen(name))) == 0;
}

/* Add the methods of the metatables in the registry (luaL_newmetatable
** keeps them under their type names): lpeg's operators are only there,
** "lpeg-pattern.__mul". A table is walked once: a program may require
** modules thousands of times. */
static int walk_registry(mp_names *t, mp_names *bt, lua_State *L)
{
  int top = lua_gettop(L), rc = 0;
  lua_pushvalue(L, LUA_REGISTRYINDEX);
  lua_pushnil(L);
  while (rc == 0 && lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1) &&
	strlen(lua_tostring(L, -2)) < NAME_MAX_LEN &&
	strcmp(lua_tostring(L, -2), "_LOADED") != 0 &&
	mp_hash_add(&t->metas, (uintptr_t)lua_topointer(L, -1)) != 0)
      rc = walk(t, bt, NULL, L, lua_tostring(L, -2), 1, 0);
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return rc;
}

void mp_names_build(mp_names *t, mp_names *bt, mp_names *lt, lua_State *L)
{
  int top = lua_gettop(L);
  memset(t, 0, sizeof(*t));
  memset(bt, 0, sizeof(*bt));
  memset(lt, 0, sizeof(*lt));
  if (__atomic_load_n(&lines_iter, __ATOMIC_RELAXED) &&
      add(t, lines_iter, "io.lines iterator", 0, 2) < 0)
    goto done;
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  if (walk(t, bt, lt, L, NULL, 0, 2) < 0 || walk_registry(t, bt, L) < 0)
    goto done;
  lua_settop(L, top);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1) &&
	  strlen(lua_tostring(L, -2)) < NAME_MAX_LEN &&
	  !module_seen(t, lua_tostring(L, -2)) &&
	  walk(t, bt, lt, L, lua_tostring(L, -2), 1, 1) < 0)
	goto done;
      lua_pop(L, 1);
    }
  }
done:
  lua_settop(L, top);
  sort(t);
  sort(bt);
  sort(lt);
}

int mp_names_module(mp_names *t, mp_names *bt, lua_State *L, int idx,
		    const char *name)
{
  int top = lua_gettop(L), rc = 0;
  if (strlen(name) >= NAME_MAX_LEN || module_seen(t, name))
    return 0;	/* Named when it was first loaded (or before start). */
  if (lua_istable(L, idx)) {
    lua_pushvalue(L, idx);
    rc = walk(t, bt, NULL, L, name, 1, 1);
  }
  lua_settop(L, top);
  if (rc == 0) rc = walk_registry(t, bt, L);	/* Its metatables. */
  sort(t);
  sort(bt);
  return rc;
}

/* Append n bytes at src to out (size bytes) at *len, never past its end. */
static void put(char *out, size_t size, size_t *len, const char *src, size_t n)
{
  if (*len + n >= size) n = size - 1 - *len;
  memcpy(out + *len, src, n);
  *len += n;
}

/* Write "parent.{a,b}" or "parent.*" (or "parent[*]" for integer keys)
** for the n candidates at e (at most 4 of them, sorted) that share a
** parent; returns the length written. */
static size_t shared_label(const mp_name *e, size_t n, char *out, size_t size)
{
  size_t len = 0, i;
  put(out, size, &len, e->name, (size_t)e->parent);
  if (e->name[e->parent] == '[') {
    put(out, size, &len, "[*]", 3);
  } else if (n > 3) {
    put(out, size, &len, ".*", 2);
  } else {
    put(out, size, &len, ".{", 2);
    for (i = 0; i < n; i++) {
      const char *key = e[i].name + e[i].parent + 1;
      if (i) put(out, size, &len, ",", 1);
      put(out, size, &len, key, strlen(key));
    }
    put(out, size, &len, "}", 1);
  }
  out[len] = '\0';
  return len;
}

/* Is candidate c another name of best's function in the same table? */
static int same_table(const mp_name *c, const mp_name *best)
{
  return c->parts == best->parts && c->parent == best->parent &&
	 best->parent && memcmp(c->name, best->name, best->parent) == 0 &&
	 strcmp(c->name, best->name) != 0;
}

/* How many other names of the best candidate's table the function of
** candidate lo (its first) has; the same name found twice (from the
** globals and from package.loaded) counts once: candidates are sorted, so
** duplicates are neighbours. */
static size_t same_names(const mp_names *t, size_t lo)
{
  size_t i, same = 0;
  for (i = lo + 1; i < t->n && t->e[i].f == t->e[lo].f; i++)
    if (same_table(&t->e[i], &t->e[lo]) &&
	strcmp(t->e[i].name, t->e[i - 1].name))
      same++;
  return same;
}

/* The first candidate for f, or t->n. */
static size_t first_of(const mp_names *t, const void *f)
{
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)t->e[mid].f < (uintptr_t)f) lo = mid + 1;
    else hi = mid;
  }
  return lo < t->n && t->e[lo].f == f ? lo : t->n;
}

/* The best name of candidate lo's function and the other names of its
** table (up to 4 in all), in byte order, into pick; how many. */
static size_t pick_names(const mp_names *t, size_t lo, mp_name *pick)
{
  size_t i, j, k = 1;
  pick[0] = t->e[lo];
  for (i = lo + 1; i < t->n && t->e[i].f == t->e[lo].f && k < 4; i++)
    if (same_table(&t->e[i], &t->e[lo]) && strcmp(t->e[i].name, t->e[i - 1].name))
      pick[k++] = t->e[i];
  for (i = 1; i < k; i++)	/* Insertion sort by name. */
    for (j = i; j > 0 && strcmp(pick[j - 1].name, pick[j].name) > 0; j--) {
      mp_name tmp = pick[j];
      pick[j] = pick[j - 1];
      pick[j - 1] = tmp;
    }
  return k;
}

size_t mp_names_closure(const mp_names *t, const void *f, const void *cl,
			char *out, size_t size, unsigned *k)
{
  mp_name pick[4];
  size_t lo, n, i, j, len = 0, found = 0;
  if (!size || !t->sorted || (lo = first_of(t, f)) == t->n) return 0;
  n = pick_names(t, lo, pick);
  for (i = 0; i < n; i++)	/* The one name the closure is under... */
    for (j = lo; j < t->n && t->e[j].f == f; j++)
      if (t->e[j].cl == cl && !strcmp(t->e[j].name, pick[i].name)) {
	*k = (unsigned)i + 1;
	found++;
	break;
      }
  if (found != 1) return 0;	/* ...or none, or several: shared label. */
  put(out, size, &len, pick[*k - 1].name, strlen(pick[*k - 1].name));
  out[len] = '\0';
  return len;
}

size_t mp_names_label(const mp_names *t, const void *f, char *out,
		      size_t size)
{
  size_t lo, i, same;
  const mp_name *best;
  if (!size || !t->sorted) return 0;	/* Being added to: ask again. */
  if ((lo = first_of(t, f)) == t->n) return 0;
  best = &t->e[lo];
  /* Other best-ranked names (as many parts) in the same table. */
  if ((same = same_names(t, lo)) != 0) {
    /* Shared by several names in one table: list them in byte order. */
    mp_name pick[4];
    pick_names(t, lo, pick);
    return shared_label(pick, same + 1, out, size);
  }
  i = 0;
  put(out, size, &i, best->name, strlen(best->name));
  out[i] = '\0';
  return i;
}

/* See mp_names.h. */
size_t mp_names_lua(const mp_names *lt, const void *proto, char *out,
		    size_t size)
{
  const GCproto *pt = (const GCproto *)proto;
  size_t lo, j;
  if (!size || !lt->sorted || (lo = first_of(lt, pt)) == lt->n) return 0;
  for (j = lo; j < lt->n && lt->e[j].f == pt; j++)
    if (lt->e[j].cl != proto_chunkname(pt) ||
	lt->e[j].line != pt->firstline)
      return 0;	/* Another prototype at the address since. */
  return mp_names_label(lt, pt, out, size);
}

/* -- The require wrapper -------------------------------------------------- */

#define MP_REQUIRE	"ljmemprof.require"	/* Registry: the wrapper. */

/* require() while recording: call the function it wraps (upvalue 1) with
** the same arguments, then collect the names of the C functions in the
** module it returns (a table), under the module's name. Errors pass
** through unchanged; no Lua object is made. Its frame is invisible to
** the profile (mp_frame.h): the stack shows the original require. */
int mp_require_wrapper(lua_State *L)
{
  int n = lua_gettop(L), i, nres;
  mp_state *s;
  luaL_checkstack(L, n + 1, "too many arguments");
  lua_pushvalue(L, lua_upvalueindex(1));
  for (i = 1; i <= n; i++) lua_pushvalue(L, i);
  lua_call(L, n, LUA_MULTRET);
  nres = lua_gettop(L) - n;
  if (nres >= 1 && lua_type(L, 1) == LUA_TSTRING &&
      (s = mp_proc_find(G(L))) != NULL) {
    /* The agent's own work: native's wrappers do not record its libc
    ** calls (qsort's buffer) while busy is set. */
    mp_enter(s);
    mp_names_module(&s->names, &s->builtins, L, n + 1, lua_tostring(L, 1));
    mp_leave(s);
  }
  return nres;
}

/* Push the wrapper of this VM (made once and kept in the registry, so no
** start leaves garbage); 0 when the VM has none yet and make is 0. */
static int push_wrapper(lua_State *L, int make)
{
  lua_getfield(L, LUA_REGISTRYINDEX, MP_REQUIRE);
  if (lua_iscfunction(L, -1) || !make) return lua_iscfunction(L, -1);
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_pushcclosure(L, mp_require_wrapper, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, MP_REQUIRE);
  return 1;
}

void mp_names_prepare(lua_State *L)
{
  push_wrapper(L, 1);
  lua_pop(L, 1);
}

void mp_names_wrap_require(mp_names *t, lua_State *L)
{
  int top = lua_gettop(L);
  lua_getfield(L, LUA_GLOBALSINDEX, "require");
  if (lua_isfunction(L, -1) && push_wrapper(L, 0) &&
      !lua_rawequal(L, -1, -2)) {
    lua_pushvalue(L, -2);
    lua_setupvalue(L, -2, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_GLOBALSINDEX, "require");
  }
  lua_settop(L, top);
}

void mp_names_unwrap_require(lua_State *L)
{
  int top = lua_gettop(L);
  lua_getfield(L, LUA_GLOBALSINDEX, "require");
  if (push_wrapper(L, 0) && lua_rawequal(L, -1, -2)) {
    lua_getupvalue(L, -1, 1);
    lua_setfield(L, LUA_GLOBALSINDEX, "require");
  }
  lua_settop(L, top);
}

/* -- Builtins by ffid ------------------------------------------------------ */

/* Count how the fast functions of table t (at the top of the stack, named
** prefix, "" for the globals) agree with mp_ffnames: a key the generated
** table has under another ffid is a disagreement (the VM was built with
** other options than the agent's headers say); other keys are aliases. */
static void check_table(lua_State *L, const char *prefix, int *good, int *bad)
{
  char name[NAME_MAX_LEN + 1];
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_isfunction(L, -1)) {
      const GCfunc *fn = (const GCfunc *)lua_topointer(L, -1);
      int n = snprintf(name, sizeof(name), "%s%s%s", prefix,
		       *prefix ? "." : "", lua_tostring(L, -2));
      size_t j;
      if (n > 0 && n <= NAME_MAX_LEN && fn->c.ffid > FF_C)
	for (j = 2; j < NFF; j++)
	  if (mp_ffnames[j] && !strcmp(mp_ffnames[j], name)) {
	    if (j == fn->c.ffid) ++*good; else ++*bad;
	    break;
	  }
    }
    lua_pop(L, 1);
  }
}

void mp_names_check(lua_State *L)
{
  static const char *const libs[] = {
    "string", "table", "math", "bit", "io", "os", "debug", "jit",
    "coroutine", NULL
  };
  int top = lua_gettop(L), good = 0, bad = 0, i;
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  check_table(L, "", &good, &bad);
  for (i = 0; libs[i]; i++) {
    lua_getfield(L, LUA_GLOBALSINDEX, libs[i]);
    if (lua_istable(L, -1)) check_table(L, libs[i], &good, &bad);
    lua_pop(L, 1);
  }
  __atomic_store_n(&ff_ok, good > 0 && bad == 0, __ATOMIC_RELAXED);
  /* io.lines() over the default input: an iterator, nothing read. */
  lua_settop(L, top);
  lua_getfield(L, LUA_GLOBALSINDEX, "io");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "lines");	/* The builtin's, not a program's. */
    if (lua_isfunction(L, -1) &&
	((const GCfunc *)lua_topointer(L, -1))->c.ffid > FF_C &&
	lua_pcall(L, 0, 1, 0) == 0 &&
	lua_iscfunction(L, -1)) {
      const GCfunc *fn = (const GCfunc *)lua_topointer(L, -1);
      if (fn->c.ffid == FF_C)
	__atomic_store_n(&lines_iter, (const void *)fn->c.f, __ATOMIC_RELAXED);
    }
  }
  lua_settop(L, top);
}

size_t mp_names_builtin(const mp_names *bt, uint64_t id, char *out,
			size_t size)
{
  size_t n = 0;
  char num[24];
  int k = 0;
  if (!size) return 0;
  if (id > FF_C && id < NFF && mp_ffnames[id] &&
      __atomic_load_n(&ff_ok, __ATOMIC_RELAXED)) {
    put(out, size, &n, mp_ffnames[id], strlen(mp_ffnames[id]));
  } else if ((n = mp_names_label(bt, (const void *)(uintptr_t)id, out,
				 size)) != 0) {
    return n;
  } else if (id >= 256) {	/* Written in Lua: its chunk name. */
    const GCstr *cn = proto_chunkname((const GCproto *)(uintptr_t)id);
    put(out, size, &n, strdata(cn), cn->len);
  } else {	/* Called from the hook: no stdio. */
    put(out, size, &n, "builtin#", 8);
    do { num[23 - k++] = (char)('0' + id % 10); id /= 10; } while (id);
    put(out, size, &n, num + 24 - k, (size_t)k);
  }
  out[n] = '\0';
  return n;
}

/* -- The host's entry ----------------------------------------------------- */

const void *mp_names_host_entry(lua_State *L)
{
  mp_walk w;
  mp_frame fr;
  const void *f = NULL;
  if (L != mainthread(G(L))) return NULL;	/* Its frames are not ours. */
  mp_walk_init(&w, L);
  while (mp_walk_next(&w, &fr))
    f = fr.kind == MP_FR_C ? (const void *)fr.fn->c.f : NULL;
  return f;
}

/* -- Names of Lua functions ---------------------------------------------- */

/* Name of upvalue idx of pt ("" when stripped). */
static const char *uv_name(const GCproto *pt, uint32_t idx)
{
  const uint8_t *p = proto_uvinfo(pt);
  if (!p || idx >= pt->sizeuv) return "";
  while (idx--) p += strlen((const char *)p) + 1;
  return (const char *)p;
}

/* The string constant d of pt. */
static const char *kstr(const GCproto *pt, uint32_t d)
{
  return strdata(gco2str(proto_kgc(pt, ~(ptrdiff_t)d)));
}

size_t mp_fnew_name(const void *proto, uint32_t i, char *out, size_t size)
{
  const GCproto *pt = proto;
  const BCIns *bc = proto_bc(pt);
  BCIns ins = bc[i], next = i + 1 < pt->sizebc ? bc[i + 1] : 0;
  BCReg a = bc_a(ins);
  const GCproto *child = gco2pt(proto_kgc(pt, ~(ptrdiff_t)bc_d(ins)));
  const char *name = NULL, *tab = NULL;
  size_t n = 0;
  if (!size) return 0;
  if ((name = mp_proto_varname(pt, i + 1, a)) != NULL) {
    /* Made in a local's register: local function f, local f = function. */
  } else if (bc_op(next) == BC_TSETS && bc_a(next) == a) {	/* t.k = */
    const char *self = child->numparams ? mp_proto_varname(child, 0, 0) : NULL;
    BCReg t = bc_b(next);
    name = kstr(pt, bc_c(next));
    if (!(tab = mp_proto_varname(pt, i, t)) && i > 0 && bc_a(bc[i - 1]) == t &&
	bc_op(bc[i - 1]) == BC_GGET)
      tab = kstr(pt, bc_d(bc[i - 1]));	/* function M.f() of a global M */
    if (tab) {
      put(out, size, &n, tab, strlen(tab));
      put(out, size, &n, self && !strcmp(self, "self") ? ":" : ".", 1);
    }
  } else if (bc_op(next) == BC_GSET && bc_a(next) == a) {	/* global */
    name = kstr(pt, bc_d(next));
  } else if (bc_op(next) == BC_MOV && bc_d(next) == a) {
    name = mp_proto_varname(pt, i + 1, bc_a(next));
  } else if (bc_op(next) == BC_USETV && bc_d(next) == a) {
    name = uv_name(pt, bc_a(next));
  }
  if (!name || !*name) return 0;
  put(out, size, &n, name, strlen(name));
  out[n] = '\0';
  return n;
}

void mp_names_free(mp_names *t)
{
  size_t i;
  for (i = 0; i < t->n; i++) free(t->e[i].name);
  free(t->e);
  mp_hash_free(&t->modules);
  mp_hash_free(&t->metas);
  mp_hash_free(&t->shared);
  memset(t, 0, sizeof(*t));
}
