/*
** cmd_info.c: `ljmemprof info`: versions, counts and totals of a profile.
*/

#include <stdlib.h>
#include <string.h>

#include "cli/mp_cli.h"
#include "render/mp_json.h"
#include "render/mp_text.h"

const char mp_help_info[] =
"NAME\n"
"    ljmemprof info - summarise a memprof profile\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof info [--format text|json] FILE\n"
"\n"
"DESCRIPTION\n"
"    Prints the format versions of the symtab and of the event stream\n"
"    (76, 'L': the ljmemprof extension, recorded with call stacks; see\n"
"    docs/FORMAT.md), whether the stream is complete (ends with its\n"
"    epilogue) or where it was cut, the events by kind, the symbols by\n"
"    kind (in the symtab header and met inside the stream), the number\n"
"    of distinct sources with events (those the report lists; in a\n"
"    profile with call stacks, then the callers in them that have no\n"
"    event of their own), the bytes allocated (new sizes of alloc and\n"
"    realloc events) and freed (old sizes of realloc and free events),\n"
"    the net change over every event (frees of blocks older than the\n"
"    profile included) and its highest during the run, the blocks\n"
"    allocated within the profile that were still live at its end, and\n"
"    the peak of those (peak:, the PEAK of report --peak: after which\n"
"    event, and when if the profile has time marks), the duration, whether a full collection ran before the\n"
"    end, why recording stopped early, and the sampling rate of a\n"
"    sampled profile. When the sizes add up to 2^63 bytes or more\n"
"    (absurd data), it says so: the byte figures are then not exact.\n"
"    A profile of native memory (native = true) says where the memory\n"
"    is (memory:): the process's RSS at the end and its largest at a\n"
"    time mark, the VM heap and the native memory live at the end\n"
"    (allocated within the profile), the machine code the JIT has\n"
"    mapped (LuaJIT's mcode areas: no native source, never a leak), and\n"
"    the rest (allocator caches and fragmentation, stacks, mapped files,\n"
"    and what was allocated before the start); when not 0, the frees and\n"
"    resizes of native blocks allocated before the recording started\n"
"    (unseen:, not counted; not counted at all when sampled) and the\n"
"    native events the agent could not keep (lost:, out of memory or\n"
"    other threads' queue full while the VM's thread took none).\n"
"    Each heap snapshot taken while recording (mp.snapshot(), or\n"
"    mp.stop{snapshot = PATH}) is listed (snapshot:) with the event it\n"
"    follows and its numbers: its objects, their bytes and what the VM\n"
"    counted, which are also the snapshot file's (ljmemprof snapshot).\n"
"\n"
"OPTIONS\n"
"    --format text|json   Text (default) or one JSON object.\n"
"    -h, --help           Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 complete; 3 cut short or damaged (summarised up to the cut or the\n"
"    damage); 2 error.\n";

/* info's own option: --format text|json. */
static int info_opt(const char *cmd, int argc, char **argv, int *i,
		    void *ctx)
{
  int *json = ctx, m;
  const char *v;
  if (!(m = mp_cli_opt_value(cmd, argc, argv, i, "--format", NULL, &v)))
    return MP_OPT_NONE;
  if (m < 0) return MP_OPT_ERROR;
  if (strcmp(v, "json") && strcmp(v, "text")) {
    fprintf(stderr, "ljmemprof %s: bad value '%s' for option '--format' "
	    "(see 'ljmemprof %s --help')\n", cmd, v, cmd);
    return MP_OPT_ERROR;
  }
  *json = v[0] == 'j';
  return MP_OPT_TAKEN;
}

/* Where reading stopped, for "complete:". */
static const char *stop_word(int rc)
{
  return rc == MP_ERR_DATA ? "bad data at byte" :
	 rc == MP_ERR_IO ? "read error at byte" : "data ends at byte";
}

int mp_cmd_info(int argc, char **argv)
{
  mp_input in;
  mp_profile p;
  const char *path;
  uint64_t nsym[MP_SRC_N], total = 0, hdr = 0, nev, alloc, freed;
  mp_memory where;
  int rc, k, mem, json = 0;
  uint32_t nsrc;	/* The report's sources (the rest: callers). */
  char b[64], note[256];
  if ((rc = mp_cli_file_args("info", argc, argv, NULL, info_opt, &json,
			     &path)) >= 0)
    return rc;
  if ((rc = mp_cli_read(path, &in, &p, NULL)) == MP_EXIT_ERROR) return rc;
  for (k = 0; k < MP_SRC_N; k++) {
    nsym[k] = p.nsym[0][k] + p.nsym[1][k];
    total += nsym[k];
    hdr += p.nsym[0][k];
  }
  /* Events as recorded; a sampled profile's estimates follow them. */
  if (!p.sample)
    for (k = 1; k < MP_AEV_N; k++) p.recorded[k] = p.total[k].n;
  nev = p.recorded[MP_AEV_ALLOC] + p.recorded[MP_AEV_REALLOC] +
	p.recorded[MP_AEV_FREE];
  nsrc = mp_profile_sources(&p);
  alloc = mp_profile_allocated(&p);
  freed = mp_profile_freed(&p);
  if ((mem = mp_profile_memory(&p, &where)) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory for the summary\n",
	    mp_cli_name(path));
    mp_profile_free(&p);
    mp_input_close(&in);
    return MP_EXIT_ERROR;
  }
  if (json) {
    fputs("{\"file\":", stdout);
    mp_json_cstr(stdout, path);
    printf(",\"size\":%zu,\"versions\":{\"symtab\":%d,\"events\":%d},"
	   "\"complete\":%s", p.len, p.r.ljs_version, p.r.ljm_version,
	   p.rc == MP_END ? "true" : "false");
    if (p.rc != MP_END) printf(",\"truncated_at\":%zu", p.r.err_offset);
    if (p.rc == MP_ERR_DATA) fputs(",\"damaged\":true", stdout);
    if (p.overflow) fputs(",\"overflow\":true", stdout);
    printf(",\"events\":{\"alloc\":%llu,\"realloc\":%llu,\"free\":%llu}",
	   (unsigned long long)p.recorded[MP_AEV_ALLOC],
	   (unsigned long long)p.recorded[MP_AEV_REALLOC],
	   (unsigned long long)p.recorded[MP_AEV_FREE]);
    if (p.sample)
      printf(",\"estimated_events\":{\"alloc\":%llu,\"realloc\":%llu,"
	     "\"free\":%llu}", (unsigned long long)p.total[MP_AEV_ALLOC].n,
	     (unsigned long long)p.total[MP_AEV_REALLOC].n,
	     (unsigned long long)p.total[MP_AEV_FREE].n);
    printf(",\"symbols\":{\"lua\":%llu,\"cfunc\":%llu,\"trace\":%llu,"
	   "\"in_header\":%llu,\"in_stream\":%llu}",
	   (unsigned long long)nsym[MP_SRC_LFUNC >> MP_SRC_SHIFT],
	   (unsigned long long)nsym[MP_SRC_CFUNC >> MP_SRC_SHIFT],
	   (unsigned long long)nsym[MP_SRC_TRACE >> MP_SRC_SHIFT],
	   (unsigned long long)hdr, (unsigned long long)(total - hdr));
    printf(",\"sources\":%u,\"callers\":%u,\"alloc_bytes\":%llu,"
	   "\"free_bytes\":%llu", nsrc, p.nsite - nsrc,
	   (unsigned long long)alloc, (unsigned long long)freed);
    if (!p.sample)	/* Not estimated (see the text below). */
      printf(",\"net_bytes\":%lld,\"peak_net_bytes\":%lld",
	     (long long)(int64_t)p.net, (long long)p.peak);
    printf(",\"live_blocks\":%llu,\"live_bytes\":%llu",
	   (unsigned long long)p.live_n, (unsigned long long)p.live_bytes);
    if (mem > 0) mp_render_json_memory(stdout, &where);
    mp_render_json_summary(stdout, &p);
    fputs("}\n", stdout);
  } else {
    printf("file:       %s (%zu bytes)\n", mp_cli_name(path), p.len);
    printf("format:     memprof, symtab version %d, events version %d%s\n",
	   p.r.ljs_version, p.r.ljm_version, mp_version_note(p.r.ljm_version));
    if (p.rc == MP_END) printf("complete:   yes\n");
    else printf("complete:   no, %s %zu (expected %s)\n", stop_word(p.rc),
		p.r.err_offset, p.r.err);
    printf("events:     %llu (alloc %llu, realloc %llu, free %llu)\n",
	   (unsigned long long)nev,
	   (unsigned long long)p.recorded[MP_AEV_ALLOC],
	   (unsigned long long)p.recorded[MP_AEV_REALLOC],
	   (unsigned long long)p.recorded[MP_AEV_FREE]);
    if (p.sample)
      printf("estimated:  %llu events (alloc %llu, realloc %llu, free %llu): "
	     "each recorded one counts for the blocks it stands for\n",
	     (unsigned long long)(p.total[MP_AEV_ALLOC].n +
				  p.total[MP_AEV_REALLOC].n +
				  p.total[MP_AEV_FREE].n),
	     (unsigned long long)p.total[MP_AEV_ALLOC].n,
	     (unsigned long long)p.total[MP_AEV_REALLOC].n,
	     (unsigned long long)p.total[MP_AEV_FREE].n);
    printf("symbols:    %llu (", (unsigned long long)total);
    for (k = MP_SRC_LFUNC; k <= MP_SRC_TRACE; k += 1 << MP_SRC_SHIFT)
      printf("%s%s %llu", k != MP_SRC_LFUNC ? ", " : "", mp_src_name(k),
	     (unsigned long long)nsym[k >> MP_SRC_SHIFT]);
    printf("); %llu in the symtab, %llu in the event stream\n",
	   (unsigned long long)hdr, (unsigned long long)(total - hdr));
    printf("sources:    %u with events (the sources the report lists)",
	   nsrc);
    if (p.nsite > nsrc)
      printf(", and %u caller%s in the call stacks with none of %s own",
	     p.nsite - nsrc, p.nsite - nsrc == 1 ? "" : "s",
	     p.nsite - nsrc == 1 ? "its" : "their");
    fputc('\n', stdout);
    if (!p.sample) {
      printf("allocated:  %lluB (new sizes of alloc and realloc events)\n",
	     (unsigned long long)alloc);
      printf("freed:      %lluB (old sizes of realloc and free events)\n",
	     (unsigned long long)freed);
    } else {	/* Each estimate says how it is made (mp_sample.h). */
      printf("allocated:  %lluB estimated (new sizes of alloc and realloc "
	     "events, a recorded new size s counting s/p(s), p(s) = 1 - "
	     "exp(-s/%.0f))\n", (unsigned long long)alloc, p.sample);
      printf("freed:      %lluB estimated (old sizes of realloc and free "
	     "events: a free counts as its block did, a reallocation's old "
	     "size o as o/p(s) of its new size s)\n", (unsigned long long)freed);
    }
    if (p.overflow)
      printf("overflow:   the sizes add up to 2^63 bytes or more: the byte "
	     "figures are not exact\n");
    if (!p.sample)
      printf("net:        %+lldB, at its highest %+lldB (allocated less "
	     "freed over every event, frees of blocks older than the profile "
	     "included)\n", (long long)(int64_t)p.net, (long long)p.peak);
    else	/* Two estimates of different blocks: no heap to subtract. */
      printf("net:        not estimated: allocated and freed are each "
	     "estimated with weights of their own, and their difference can "
	     "fall below 0 (live is the estimate of what was held)\n");
    printf("live:       %llu blocks, %lluB allocated within the profile and "
	   "not freed%s\n", (unsigned long long)p.live_n,
	   (unsigned long long)p.live_bytes, p.sample ? " (estimated: the "
	   "weights of the recorded blocks still live)" : "");
    fputs("peak:       ", stdout);
    mp_render_peak_line(stdout, &p, 0);
    fputs(": the most bytes allocated within the profile live at once "
	  "(report --peak)", stdout);
    if (p.sample) fputs(" (estimated: live at its highest)", stdout);
    fputc('\n', stdout);
    if (p.nmark)
      printf("duration:   %s (%llu time marks)\n",
	     mp_fmt_ns(b, sizeof(b), p.mark.ns), (unsigned long long)p.nmark);
    printf("collected:  %s", p.collect ? "yes (a full garbage collection "
	   "ran before the end: what is live is reachable)" : p.settled ?
	   "before the stop (the collector had just finished a cycle, as after "
	   "the program's collectgarbage(), and nothing was allocated after "
	   "it: what is live survived it)" : p.exited ? "no (asked for, but the "
	   "process exited without closing its Lua state, so it could not "
	   "run: what is live may be garbage not yet collected)" : "no (what "
	   "is live may be garbage not yet collected)");
    {	/* As the report's NOTES says it. */
      mp_cost all;
      if (mp_profile_gc_top(&p, &all) != UINT32_MAX)
	printf("; it freed %lluB in %llu block%s made within the profile%s",
	       (unsigned long long)all.plus, (unsigned long long)all.n,
	       all.n == 1 ? "" : "s", p.sample ? " (estimated)" : "");
    }
    fputc('\n', stdout);
    if (p.stopped[0]) printf("stopped:    %s\n", p.stopped);
    for (unsigned i = 0; i < p.nsnap && i < MP_SNAPMARKS; i++) {
      const struct mp_snapmark *m = &p.snaps[i];
      fputs("snapshot:   ", stdout);
      if (*m->name) mp_text_put(stdout, m->name, strlen(m->name), 0);
      else fputs("(a callback)", stdout);
      printf(" taken after event %llu: %llu objects, %lluB "
	     "(the VM counted %lluB)%s\n",
	     (unsigned long long)m->ev, (unsigned long long)m->objects,
	     (unsigned long long)m->bytes, (unsigned long long)m->total,
	     m->cut ? ", cut short at its max_size" : "");
    }
    if (p.nsnap > MP_SNAPMARKS)
      printf("snapshot:   and %u more\n", p.nsnap - MP_SNAPMARKS);
    if (mem > 0) {	/* Where the memory is (native profiles). */
      fputs("memory:     ", stdout);
      mp_render_memory_line(stdout, &where, 0);
      fputc('\n', stdout);
    }
    if (p.native_unseen)
      printf("unseen:     %s\n", mp_note_native_unseen(note, sizeof(note),
							 p.native_unseen));
    if (p.native_lost)
      printf("lost:       %s\n", mp_note_native_lost(note, sizeof(note),
						       p.native_lost));
    if (p.sample)
      printf("sampled:    one sample every %.0f bytes allocated on average: "
	     "counts and bytes are estimates\n", p.sample);
  }
  mp_profile_free(&p);
  mp_input_close(&in);
  return mp_cli_finish_output(rc);
}
