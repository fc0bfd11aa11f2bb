/*
** render_snaphtml.c: the HTML view of a heap snapshot (`ljmemprof
** snapshot --format html`), one self-contained page in the style of the
** report's (page.css): the summary, the live total by type, the top
** retainers with their paths from a root, the path classes, the top of
** the dominator tree (expandable), and with --profile the lines that made
** what is live and what each retainer holds.
**
** The page is src/render/snap_page.html and its script snap_page.js,
** made C strings at build time (scripts/gen-embed.pl, into snap_assets.h).
** Its data is made by cmd_snapshot.c with the JSON report's own code, so
** its numbers are the JSON report's:
**
**   data := {"kind": "snapshot", "file": FILE, "report": <the object of
**            --format json, with "recording" under --profile>, "tree":
**            [[up, id, type, self, retained, more, more_bytes, path]]}
**
** "tree" is the top of the dominator tree (mp_heapsnap_domtree()): up the
** index of the node's dominator (-1: the root), more and more_bytes the
** children left out and what they retain.
*/

#include "render/mp_render.h"
#include "snap_assets.h"	/* mp_snap_html, mp_snap_js (generated). */

int mp_render_snapshot_html(FILE *out, const char *data, size_t len)
{
  return mp_render_page(out, mp_snap_html, mp_snap_js, data, len, NULL, 0);
}
