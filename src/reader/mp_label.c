/*
** mp_label.c: labels of locations (see mp_label.h for their shapes).
*/

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reader/mp_label.h"

/* Append to out at *n (snprintf-style, never past size). */
static void put(char *out, size_t size, size_t *n, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t size, size_t *n, const char *fmt, ...)
{
  va_list ap;
  int m;
  if (*n + 1 >= size) return;
  va_start(ap, fmt);
  m = vsnprintf(out + *n, size - *n, fmt, ap);
  va_end(ap);
  if (m > 0) *n = *n + (size_t)m < size ? *n + (size_t)m : size - 1;
}

size_t mp_name_cut(const char *s, size_t n, size_t max)
{
  if (n <= max) return n;
  while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80) max--;
  return max;
}

/* Append name nm, cut to MP_NAME_SHOWN bytes if longer (or at a NUL
** byte: a label is a C string). */
static void put_name(char *out, size_t size, size_t *n, const mp_name *nm)
{
  size_t shown = mp_name_cut(nm->s, nm->kept, MP_NAME_SHOWN);
  shown = strnlen(nm->s, shown);
  put(out, size, n, "%.*s", (int)shown, nm->s);
  if (shown < nm->len)
    put(out, size, n, "... (%llu bytes)", (unsigned long long)nm->len);
}

mp_loc mp_loc_of(const mp_symtab *t, int src, uint64_t id, uint64_t line)
{
  uint32_t i = mp_symtab_resolve(t, src, id);
  mp_loc l;
  l.src = (uint8_t)src;
  l.id = id;
  l.line = line;
  l.aux = 0;
  l.name = 0;
  l.heap = 0;
  if (i) {
    const mp_sym *s = &t->sym[i];
    l.name = s->name;
    l.aux = src == MP_SRC_CFUNC ? id - s->id : s->line;
  }
  return l;
}

/* Append the name of chunk: "function_alias_N" for source text,
** [string "name"] for a short name of code loaded from a string, else the
** name itself. */
static void put_chunk(mp_strtab *names, uint32_t chunk, char *out,
		      size_t size, size_t *n)
{
  const mp_name *nm = mp_strtab_get(names, chunk);
  uint32_t alias = 0;
  if (mp_name_is_text(nm->s, nm->kept))
    alias = mp_strtab_alias(names, chunk);	/* 0: out of memory. */
  if (alias) put(out, size, n, "function_alias_%u", alias);
  else if (mp_name_is_string(nm->s, nm->kept))
    put(out, size, n, "[string \"%.*s\"]", (int)nm->kept, nm->s);
  else put_name(out, size, n, nm);
}

/* Append "chunk:line" (the chunk as put_chunk() names it). */
static void put_lua(mp_strtab *names, uint32_t chunk, uint64_t line,
		    char *out, size_t size, size_t *n)
{
  put_chunk(names, chunk, out, size, n);
  put(out, size, n, ":%llu", (unsigned long long)line);
}

size_t mp_chunk_label(mp_strtab *names, uint32_t chunk, char *out,
		      size_t size)
{
  size_t n = 0;
  if (!size) return 0;
  out[0] = '\0';
  put_chunk(names, chunk, out, size, &n);
  return n;
}

size_t mp_label(mp_strtab *names, const mp_loc *l, char *out, size_t size)
{
  size_t n = 0;
  if (!size) return 0;
  out[0] = '\0';
  switch (l->src) {
  case MP_SRC_LFUNC:
    if (!l->name) {
      put(out, size, &n, "LFUNC 0x%llx:%llu", (unsigned long long)l->id,
	  (unsigned long long)l->line);
      break;
    }
    put_lua(names, l->name, l->line, out, size, &n);
    if (!mp_strtab_line_shared(names, l->name, l->line)) break;
    if (mp_strtab_fname(names, l->name, l->aux)) {	/* Which function. */
      put(out, size, &n, " (");
      put_name(out, size, &n, mp_strtab_get(names,
					    mp_strtab_fname(names, l->name,
							    l->aux)));
      put(out, size, &n, ")");
    } else if (l->aux) {
      put(out, size, &n, " (function at line %llu)",
	  (unsigned long long)l->aux);
    } else {
      put(out, size, &n, " (main chunk)");
    }
    break;
  case MP_SRC_CFUNC:
    if (!l->name) {
      put(out, size, &n, "CFUNC 0x%llx", (unsigned long long)l->id);
      break;
    }
    put_name(out, size, &n, mp_strtab_get(names, l->name));
    if (mp_strtab_get(names, l->name)->cshared && l->id != l->aux)
      put(out, size, &n, "@0x%llx", (unsigned long long)(l->id - l->aux));
    if (l->aux) put(out, size, &n, "+0x%llx", (unsigned long long)l->aux);
    break;
  case MP_SRC_TRACE:
    if (l->id || !l->name)
      put(out, size, &n, "TRACE [%llu]", (unsigned long long)l->id);
    else	/* Traces of several profiles (mp_merge.h). */
      put(out, size, &n, "TRACE");
    if (l->name) {
      put(out, size, &n, " started at ");
      put_lua(names, l->name, l->aux, out, size, &n);
    }
    break;
  case MP_SRC_STACK:	/* An event's stack, by its innermost node. */
    put(out, size, &n, "STACK %llu", (unsigned long long)l->id);
    break;
  default:
    put(out, size, &n, "INTERNAL");
    break;
  }
  if (l->heap == MP_HEAP_NATIVE) put(out, size, &n, " [native]");
  return n;
}

mp_loc mp_frame_loc(const mp_symtab *t, int fkind, uint64_t fa,
		    uint64_t line)
{
  mp_loc l;
  memset(&l, 0, sizeof(l));
  switch (fkind) {
  case MP_FK_LUA: return mp_loc_of(t, MP_SRC_LFUNC, fa, line);
  case MP_FK_C: return mp_loc_of(t, MP_SRC_CFUNC, fa, 0);
  case MP_FK_TRACE: return mp_loc_of(t, MP_SRC_TRACE, fa, 0);
  case MP_FK_HOST: return mp_loc_of(t, MP_SRC_CFUNC, 0, 0);
  case MP_FK_BUILTIN:
    l.id = fa;
    l.name = mp_symtab_builtin(t, fa);
    return l;
  case MP_FK_NATIVE:
    l.id = fa;
    l.heap = MP_HEAP_NATIVE;
    return l;
  case MP_FK_THREAD:
    l.id = fa;
    return l;
  default:	/* A cut: the depth limit. */
    l.id = fa;
    return l;
  }
}

/* Is l (resolved) the main chunk of a Lua file or string (first line 0,
** not one of LuaJIT's builtins written in Lua)? */
static int main_chunk(const mp_strtab *names, const mp_loc *l)
{
  const mp_name *nm = mp_strtab_get(names, l->name);
  return l->aux == 0 && !(nm->kept >= 10 && !memcmp(nm->s, "=[builtin:", 10));
}

/* Append the chunk of l as a frame shows it: its label without a file's
** '@'. */
static void put_file(mp_strtab *names, const mp_loc *l, char *out,
		     size_t size, size_t *n)
{
  size_t at = *n;
  put_chunk(names, l->name, out, size, n);
  if (*n > at && out[at] == '@' && *n > at + 1) {
    memmove(out + at, out + at + 1, *n - at);	/* With its NUL. */
    --*n;
  }
}

size_t mp_func_label(mp_strtab *names, const mp_loc *l, char *out,
		     size_t size)
{
  uint32_t f;
  size_t n = 0;
  if (!size) return 0;
  out[0] = '\0';
  if (l->src != MP_SRC_LFUNC || !l->name) return 0;
  if ((f = mp_strtab_fname(names, l->name, l->aux)) != 0) {
    put_name(out, size, &n, mp_strtab_get(names, f));
  } else if (main_chunk(names, l)) {
    put(out, size, &n, "main chunk");
  } else {
    put(out, size, &n, MP_FUNC_AT);	/* Not "<...>": pprof cuts it. */
    put_file(names, l, out, size, &n);
    put(out, size, &n, ":%llu", (unsigned long long)l->aux);
  }
  return n;
}

size_t mp_frame_label(mp_strtab *names, int fkind, const mp_loc *l,
		      char *out, size_t size)
{
  int m;
  switch (fkind) {
  case MP_FK_LUA:
    if (l->name && (mp_strtab_fname(names, l->name, l->aux) ||
		    main_chunk(names, l))) {	/* "parse_row (app.lua:12)" */
      size_t n = mp_func_label(names, l, out, size);
      put(out, size, &n, " (");
      put_file(names, l, out, size, &n);
      if (l->line)	/* 0: no line known (below a trace), not a line. */
	put(out, size, &n, ":%llu", (unsigned long long)l->line);
      put(out, size, &n, ")");
      return n;
    }
    return mp_label(names, l, out, size);
  case MP_FK_BUILTIN:
    if (l->name) {
      const mp_name *nm = mp_strtab_get(names, l->name);
      m = snprintf(out, size, "%.*s",
		   (int)mp_name_cut(nm->s, nm->kept, MP_NAME_SHOWN), nm->s);
    } else {
      m = snprintf(out, size, "builtin#%llu", (unsigned long long)l->id);
    }
    break;
  case MP_FK_CUT:
    m = snprintf(out, size, "[deeper than %llu frames]",
		 (unsigned long long)l->id);
    break;
  case MP_FK_NATIVE:
    if (mp_native_fname(l->id))
      m = snprintf(out, size, "%s [native]", mp_native_fname(l->id));
    else
      m = snprintf(out, size, "native#%llu [native]",
		   (unsigned long long)l->id);
    break;
  case MP_FK_THREAD:
    m = snprintf(out, size, "[thread %llu]", (unsigned long long)l->id);
    break;
  default:
    return mp_label(names, l, out, size);
  }
  if (m < 0) m = 0;
  return (size_t)m < size ? (size_t)m : size - 1;
}
