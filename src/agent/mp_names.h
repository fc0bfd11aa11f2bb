/*
** mp_names.h: the Lua names of C functions and builtins, and of functions
** from their parents' bytecode (mp_names.c); the require wrapper that
** names the modules loaded while recording.
*/

#ifndef MP_NAMES_H
#define MP_NAMES_H

#include <stddef.h>

#include "lua.h"
#include "mp_agent.h"

/* Collect the names of the C functions reachable from the globals and
** package.loaded into t, of the builtins into bt, and of the Lua
** functions into lt (by prototype: the names of functions made before
** the recording, whose parents' bytecode may be gone). */
void mp_names_build(mp_names *t, mp_names *bt, mp_names *lt, lua_State *L);
/* The name of Lua prototype pt collected at start into out, if it is the
** same prototype still (its chunk and first line); its length, or 0. */
size_t mp_names_lua(const mp_names *lt, const void *pt, char *out,
		    size_t size);
/* Add those of the module (a table) at stack index idx, named name, and
** of the registry's new metatables, unless a module of that name was
** walked before (at start or by an earlier require). */
int mp_names_module(mp_names *t, mp_names *bt, lua_State *L, int idx,
		    const char *name);
/* The name of builtin id (an ffid, or the prototype of one written in
** Lua) into out: the generated name of its ffid, else its Lua name, else
** "builtin#N". Its length. */
size_t mp_names_builtin(const mp_names *bt, uint64_t id, char *out,
			size_t size);
/* The name of the function that FNEW at bytecode position i of pt makes,
** from the instruction that stores it (local function f, M.f = function,
** function obj:m, global function f) into out (NUL-terminated); its
** length, 0 if it has none (an argument, a table entry by number). */
size_t mp_fnew_name(const void *pt, uint32_t i, char *out, size_t size);
/* At load time: check the generated names of the fast functions against
** the VM's library tables, and find io.lines's iterator. */
void mp_names_check(lua_State *L);
/* The C function at the bottom of the main thread's stack when L is the
** main thread (the host's entry, luajit's main), else NULL. */
const void *mp_names_host_entry(lua_State *L);
/* For closure cl of C function f whose label several names of one table
** share (in names->shared): its own name into out and in *k its place in
** the label (1 to 3); the length, 0 if cl is under none of them. */
size_t mp_names_closure(const mp_names *t, const void *f, const void *cl,
			char *out, size_t size, unsigned *k);
/* The label of C function f into out (NUL-terminated); 0 if it has none. */
size_t mp_names_label(const mp_names *t, const void *f, char *out,
		      size_t size);
void mp_names_free(mp_names *t);
/* Make the VM's require wrapper (before recording: it is kept). */
void mp_names_prepare(lua_State *L);
/* The wrapper of require (a lua_CFunction). */
int mp_require_wrapper(lua_State *L);
/* Put the wrapper in _G.require (over whatever is there), and back. */
void mp_names_wrap_require(mp_names *t, lua_State *L);
void mp_names_unwrap_require(lua_State *L);

#endif
