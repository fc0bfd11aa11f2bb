/*
** mp_render.h: the renderers of a report, in a registry.
**
** A renderer turns the sections of one profile (mp_sections) into one
** output format on a stdio stream. Each is a file of its own in this folder
** (render_text.c, render_json.c, render_collapsed.c, render_svg.c,
** render_pprof.c) and a line in the table of mp_render.c; the CLI parses
** --format against that table and lists it in --help, so a new format
** touches this folder only.
**
** The stack formats (collapsed, svg, pprof) draw the call-stack tree
** (analysis/mp_stacks.h): their registry function builds it from the
** sections and hands it to a function of the tree (mp_render_*_tree),
** which the tests also call on trees built by hand. The text and JSON
** reports show it per site with --stacks (mp_sview.h).
**
** Errors: a renderer returns 0, or -1 when writing failed (errno set) or
** memory ran out.
*/

#ifndef MP_RENDER_H
#define MP_RENDER_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/mp_diff.h"
#include "analysis/mp_sections.h"
#include "analysis/mp_stacks.h"

/* How to render. */
typedef struct mp_render_opts {
  uint64_t top;		/* Rows per section; 0 = all. */
  int leak_only;	/* Only the heap summary. */
  int human;		/* Sizes as KiB, MiB, ... (text only). */
  const char *file;	/* The profile's name, for formats that show it. */
  const char *const *files;	/* All of them (a merge: several)... */
  int nfiles;		/* ...and how many (0: just file). */
  const char *program;	/* What ran, for titles (run: the script and its
			   arguments); NULL: the profiles' names. */
  mp_metric metric;	/* What stack formats and views weigh. */
  uint32_t stacks;	/* Text and JSON: show call stacks, this many per
			   site (UINT32_MAX: all); 0: no stack view. */
  int peak;		/* Text and JSON: the PEAK view. */
  int temp;		/* Text and JSON: the TEMPORARY view. */
  int tarantool;	/* Text and JSON: the heap summary of Tarantool's
			   parser (mp_sections.held), not the live
			   blocks by owner (mp_sections.live). */
} mp_render_opts;

typedef int (*mp_render_fn)(FILE *out, const mp_sections *sec,
			    const mp_render_opts *o);

/* The diff of two profiles in a format (`ljmemprof diff`). */
typedef int (*mp_render_diff_fn)(FILE *out, const mp_diff *d,
				 const mp_render_opts *o);

/* What a renderer is (mp_renderer.flags). */
#define MP_RF_BINARY	1	/* Bytes, not text: never to a terminal. */
#define MP_RF_STACKS	2	/* Draws the stack tree: takes --metric, not
				   the --stacks view. */
#define MP_RF_FULL	4	/* Shows every analysis (peak, temporaries,
				   timeline): the pass keeps them all. */

/* A renderer: its --format name, a line for --help, its function, and
** the one for a diff if the format has one. */
typedef struct mp_renderer {
  const char *name;
  const char *summary;
  mp_render_fn render;
  int flags;		/* MP_RF_*. */
  mp_render_diff_fn diff;	/* NULL: no diff in this format. */
} mp_renderer;

/* Every renderer, the default first; the table ends with a NULL name. */
extern const mp_renderer mp_renderers[];

/* The renderer called name, or NULL. */
const mp_renderer *mp_renderer_find(const char *name);

/* The renderers (render_*.c). */
int mp_render_text(FILE *out, const mp_sections *sec, const mp_render_opts *o);
int mp_render_json(FILE *out, const mp_sections *sec, const mp_render_opts *o);
int mp_render_collapsed(FILE *out, const mp_sections *sec,
			const mp_render_opts *o);
int mp_render_svg(FILE *out, const mp_sections *sec, const mp_render_opts *o);
int mp_render_pprof(FILE *out, const mp_sections *sec,
		    const mp_render_opts *o);
int mp_render_html(FILE *out, const mp_sections *sec, const mp_render_opts *o);

/* Write a page (render_html.c): template html (page.html's markers
** @STYLE@, @DATA@, @SCRIPT@, and @TITLE@ where o is not NULL: the title
** o names, a diff's if diff) with page.css, data (len bytes of JSON, '<'
** in it as \u003c) and script js. 0, or -1 (writing failed, or the
** template lacks a marker). */
int mp_render_page(FILE *out, const char *html, const char *js,
		   const char *data, size_t len, const mp_render_opts *o,
		   int diff);

/* The HTML view of a heap snapshot (render_snaphtml.c): snap_page.html
** and snap_page.js around data, the JSON that cmd_snapshot.c makes. */
int mp_render_snapshot_html(FILE *out, const char *data, size_t len);

/* The diffs (render_diff.c, render_html.c). */
int mp_render_diff_text(FILE *out, const mp_diff *d, const mp_render_opts *o);
int mp_render_diff_json(FILE *out, const mp_diff *d, const mp_render_opts *o);
int mp_render_diff_collapsed(FILE *out, const mp_diff *d,
			     const mp_render_opts *o);
int mp_render_diff_html(FILE *out, const mp_diff *d, const mp_render_opts *o);

/* The stack formats, from a tree. */
typedef int (*mp_render_tree_fn)(FILE *out, const mp_stacktree *t,
				 const mp_render_opts *o);
int mp_render_collapsed_tree(FILE *out, const mp_stacktree *t,
			     const mp_render_opts *o);
/* Collapsed stacks with two values a line, base's (by node) and t's. */
int mp_render_collapsed_pairs(FILE *out, const mp_stacktree *t,
			      const mp_render_opts *o, const mp_dnode *base);
int mp_render_svg_tree(FILE *out, const mp_stacktree *t,
		       const mp_render_opts *o);
int mp_render_pprof_tree(FILE *out, const mp_stacktree *t,
			 const mp_render_opts *o);

/* The stack views of the text and JSON reports, from sec and its tree. */
int mp_render_text_stacks(FILE *out, const mp_sections *sec,
			  const mp_stacktree *t, const mp_render_opts *o,
			  uint8_t *used);
/* For a profile without call stacks (t one level deep): the sources
** under metric o->metric, heaviest first (o->top of them), one line each
** with their cost, as the CALL STACKS view's first lines (`check`). */
int mp_render_text_sources(FILE *out, const mp_sections *sec,
			   const mp_stacktree *t, const mp_render_opts *o,
			   uint8_t *used);
int mp_render_json_stacks(FILE *out, const mp_sections *sec,
			  const mp_stacktree *t, const mp_render_opts *o,
			  uint8_t *used);

/* -- Helpers shared by renderers ------------------------------------------ */

/* The ALIASES of the text report: the texts of the aliases marked in used
** (by alias number), with line numbers; nothing if none is. */
void mp_render_text_aliases(FILE *out, const mp_strtab *names,
			    const uint8_t *used);

/* The JSON "aliases" field (after a comma) of the aliases marked in
** used. */
void mp_render_json_aliases(FILE *out, const mp_strtab *names,
			    const uint8_t *used);

/* The JSON source object of site i of sec: kind, label, and what tells it
** apart (docs/REPORT.md). */
void mp_render_json_source(FILE *out, const mp_sections *sec, uint32_t i);

/* The four costs of a stack or site as JSON fields (alloc_events,
** alloc_bytes, live_blocks, live_bytes), and what it held at the peak
** (peak_blocks, peak_bytes) unless peak is NULL. */
void mp_render_json_costs(FILE *out, const mp_cost *alloc,
			  const mp_cost *live, const mp_cost *peak);

/* Format n bytes as "123B" or, if human, "1.50KiB"; returns buf. */
const char *mp_fmt_bytes(char *buf, size_t size, uint64_t n, int human);

/* Format a time of ns nanoseconds as "1.234 s" or, below a second,
** "12.345 ms"; returns buf. */
const char *mp_fmt_ns(char *buf, size_t size, uint64_t ns);

/* The summary line of the peak (without a newline), as text and info
** print it: "10.00MiB in 3 blocks, after event 7 of 12, at 1.500 s of
** 3.000 s". */
void mp_render_peak_line(FILE *out, const mp_profile *p, int human);

/* Where the memory was (mp_profile_memory), as text and info print it
** (without a newline): "RSS 4MiB at the end (at most ... at a time mark):
** VM heap ... and native ... live (allocated within the profile), the
** rest ... (allocator caches and fragmentation, ...)". */
void mp_render_memory_line(FILE *out, const mp_memory *m, int human);

/* The same as a JSON field after a comma: "memory":{"rss_bytes", ...}. */
void mp_render_json_memory(FILE *out, const mp_memory *m);

/* The JSON fields that summarise p (each after a comma): "peak", "live",
** "collected", and "stopped", "sampled" and the native notes
** (mp_render_json_native) when they apply. */
void mp_render_json_summary(FILE *out, const mp_profile *p);

/* The notes that end a report (text NOTES, JSON "notes"), one line each
** without a newline, through fn(ctx, line): that the profile is cut
** short (or damaged) and after how many events; that a full collection
** ran before the end, or mp_note_settled, or mp_note_nogc(); what the
** final collection freed of the blocks the program made (garbage, or
** what only the main chunk's locals held: they end when it returns),
** with the source that made the most of it; why recording stopped early;
** the native events lost (mp_note_native_lost: the native figures are
** short); in a profile without call stacks, what is live at the end on
** JIT traces (their rows tell no line: record with --stacks or -joff);
** in one with them (given its tree t, else NULL), what the traces
** allocated without a line, when 1% or more of what was allocated (only
** -joff tells those lines). Sizes as -H if human. Returns the site
** named, or UINT32_MAX (its alias, if any, is the caller's to list). */
uint32_t mp_render_notes(const mp_sections *sec, const mp_stacktree *t,
			 int human, void (*fn)(void *ctx, const char *line),
			 void *ctx);

/* The note of a profile that says of no full collection before its end
** (`report`, `check`). */
extern const char mp_note_uncollected[];

/* The note of a profile whose collection, asked for, could not run: the
** process exited with the Lua state open (p->exited). */
extern const char mp_note_exited[];

/* The note of a profile with no full collection before its end:
** mp_note_exited or mp_note_uncollected. */
const char *mp_note_nogc(const mp_profile *p);

/* The note of a profile whose stop found the heap as a finished
** collection cycle left it, nothing allocated since (p->settled). */
extern const char mp_note_settled[];

/* Into buf, the note of a profile cut short, damaged or unreadable
** (p->rc is not MP_END): after how many events, and that the frees past
** the cut are missing (`report`, `check`). */
const char *mp_note_cut(char *buf, size_t size, const mp_profile *p);

/* Into buf, the note of a profile whose recording ended in lua_close()
** after n finalisers of userdata ran (`report`, `check`). */
const char *mp_note_closefin(char *buf, size_t size, unsigned n);

/* Into buf, what native_unseen (p->native_unseen) frees and resizes of
** native blocks made before the start say, as text prints it (info,
** report's MEMORY); n is not 0. */
const char *mp_note_native_unseen(char *buf, size_t size, uint64_t n);

/* Into buf, the note of n native events the agent lost (no memory to keep
** them): info, report's MEMORY and NOTES; n is not 0. */
const char *mp_note_native_lost(char *buf, size_t size, uint64_t n);

/* The JSON fields of the native notes after a comma, in a profile
** recorded with native memory (else none): "native_unseen" and
** "native_lost", 0 when there were none. */
void mp_render_json_native(FILE *out, const mp_profile *p);

/* How the note on live blocks of JIT traces begins (Tarantool's layout
** has no such note: --accounting tarantool leaves it out). */
#define MP_NOTE_TRACES	"TRACE rows hold "
/* The start of the note of a stack profile's allocations made by
** compiled code without a line. */
#define MP_NOTE_TRACES_ALONE	"JIT traces made "

/* Rows of a section of n to show under o. */
static inline uint32_t mp_rows_shown(uint32_t n, const mp_render_opts *o)
{
  return o->top && o->top < n ? (uint32_t)o->top : n;
}

/* Build sec's stack tree, call fn on it, free it: a stack format's
** registry function. */
int mp_render_with_tree(FILE *out, const mp_sections *sec,
			const mp_render_opts *o, mp_render_tree_fn fn);

/* --metric names: "alloc-bytes", ...; what a metric counts, for people
** ("allocated bytes", ...); the metric called name (-1 if none). */
extern const char *const mp_metric_names[MP_METRIC_N];
extern const char *const mp_metric_what[MP_METRIC_N];
int mp_metric_find(const char *name);

/* The one rate p was sampled at (mean bytes between samples): its
** "sample", or the rate every profile of a merge shares; 0 if it was not
** sampled, or merged from profiles of different rates or some not
** sampled (p->rates has each, and p->sample is not 0 then). */
double mp_render_rate(const mp_profile *p);

/* The section order of the text layout (Tarantool's): allocations,
** reallocations, deallocations. */
extern const uint8_t mp_section_order[3];

/* A line inside a trace's code and what the trace made there. */
typedef struct mp_tline {
  const char *label;	/* The line labelled as a source (the rows of
			   the report: "@app.lua:1 (vec)"), or "(the trace alone:
			   no line told)". */
  mp_cost c;		/* Allocations and reallocations (n, plus), or
			   the blocks live at the end. */
} mp_tline;

/* The lines inside the code of trace site `site` of a stack profile that
** its events were made at (each stack's innermost Lua frame above the
** trace frame: the same events as the stack views'), heaviest first, into
** *lines (free() it; NULL and 0 when none), with their allocations and
** reallocations, or (live) the blocks they hold at the end, which HEAP
** SUMMARY bills to the trace. -1 when out of memory. */
int mp_trace_lines(const mp_stacktree *t, uint32_t site, int live,
		   mp_tline **lines, uint32_t *n);

/* Whether HEAP SUMMARY lists the lines inside its traces (text, json):
** a stack profile (the lines are told) with a trace among the rows
** shown under o. */
int mp_heap_lines(const mp_sections *sec, const mp_render_opts *o);

#endif
