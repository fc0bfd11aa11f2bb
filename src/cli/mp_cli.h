/*
** mp_cli.h: what the commands of `ljmemprof` share.
**
** Each command is a file (cmd_*.c) with its manual and its function, and
** a line in the command table of ljmemprof.c. Options common to several
** commands are parsed in cli_opts.c; cli_read.c opens a profile, runs the
** profile pass and prints the one line that says what went wrong.
**
** Errors: a command returns its exit status (MP_EXIT_*) after printing one
** line on standard error that names the file, the byte offset and what was
** expected there.
*/

#ifndef MP_CLI_H
#define MP_CLI_H

#include <stdio.h>

#include "analysis/mp_profile.h"
#include "analysis/mp_sections.h"
#include "reader/mp_input.h"
#include "render/mp_render.h"

/* Exit statuses (documented in --help and docs/REPORT.md). */
#define MP_EXIT_OK		0	/* Complete profile, all reported. */
#define MP_EXIT_ERROR		2	/* Usage, I/O, not a profile, memory. */
#define MP_EXIT_TRUNCATED	3	/* Cut short or damaged; reported up
					   to the cut or the damage. */

/* A command: its name, a line for the main manual, its manual, and the
** function that runs it on its arguments (argv[0] is the first one after
** the command's name). */
typedef struct mp_command {
  const char *name;
  const char *summary;
  const char *help;
  int (*run)(int argc, char **argv);
} mp_command;

/* The commands (cmd_*.c). */
extern const char mp_help_report[], mp_help_info[], mp_help_events[],
  mp_help_run[], mp_help_diff[], mp_help_check[], mp_help_snapshot[];
int mp_cmd_report(int argc, char **argv);
int mp_cmd_diff(int argc, char **argv);
int mp_cmd_info(int argc, char **argv);
int mp_cmd_events(int argc, char **argv);
int mp_cmd_run(int argc, char **argv);
int mp_cmd_check(int argc, char **argv);
int mp_cmd_snapshot(int argc, char **argv);
/* `ljmemprof diff` on two heap snapshots: `snapshot --diff` (cmd_snapshot.c)
** with its options, named diff in messages. */
int mp_cli_snapshot_diff(int argc, char **argv);

/* Print the manual of a command (NULL: the main one); 0, or 2 if there is
** no such command. */
int mp_cli_help(const char *cmd, FILE *out);

/* A name from the command line (a file's) for a message: escaped as names
** from a profile are (render/mp_text.h: no control characters, newlines
** or invalid UTF-8 reach the terminal), cut with "[...]" past 16 KiB. The
** text is in one of 4 buffers of the calling thread, reused in turn: good
** until the fourth next call. */
const char *mp_cli_name(const char *s);

/* -- Options (cli_opts.c) ------------------------------------------------- */

/* Options of the report-printing commands (report, run). */
typedef struct mp_cli_opts {
  mp_sort sort;
  mp_render_opts render;
  const mp_renderer *format;	/* NULL: the default (the first). */
  int metric_set;		/* --metric was given. */
  int sort_set;			/* --sort was given. */
  int top_set;			/* --top was given. */
  int accounting_set;		/* --accounting was given. */
  int stacks_run;		/* run: the view comes from --stacks (frames
				   recorded), not --stacks-per-source. */
  const char *output;		/* -o FILE of report; NULL or "-": stdout. */
  unsigned want;		/* What the pass keeps (MP_WANT_*). */
  unsigned heapsel;		/* --heap: MP_HEAPSEL_*. */
  uint32_t window;		/* --temporary N, or 0: the default. */
  const char *html;		/* run --html FILE: also the HTML report. */
  /* Called at each snapshot mark of the profile (mp_profile.on_snap). */
  void (*on_snap)(void *ctx, struct mp_profile *p,
		  const struct mp_snapmark *m);
  void *snap_ctx;
  uint32_t bare_stacks;		/* What a bare --stacks means, set by the
				   command before parsing (diff: 10); 0:
				   MP_STACKS_VIEW. Resolved as it is parsed,
				   so that no number given means "bare". */
} mp_cli_opts;

#define MP_STACKS_VIEW	3	/* Stacks per source of a bare
				   --stacks-per-source. */
#define MP_TOP_TEXT	20	/* Lines per section of the text report
				   without --top. */

/* Result of parsing one option at argv[*i]. */
enum { MP_OPT_NONE, MP_OPT_TAKEN, MP_OPT_ERROR };

/* If argv[*i] is option name (long, or short if given), store its value
** (from "--name=value" or the next argument) in *val. Returns 1 if it
** matched, 0 if not, -1 if the value is missing (after saying so). */
int mp_cli_opt_value(const char *cmd, int argc, char **argv, int *i,
		     const char *name, const char *shortname,
		     const char **val);

/* Parse a report option (--format, --sort, --top, --leak-only,
** --human-readable, --metric, --stacks-per-source (diff: --stacks),
** --peak, --temporary, --accounting) at argv[*i],
** advancing *i past its argument. Prints the error itself (cmd names the
** command). */
int mp_cli_report_opt(const char *cmd, int argc, char **argv, int *i,
		      mp_cli_opts *o);

/* If argv[*i] is an option with an optional number (`--stacks`, `--stacks
** N`, `--stacks=N`), the number in *n (def if none: the next argument is
** taken only if it is all digits). 1 if it matched, 0 if not, -1 after
** saying that the value is bad. */
int mp_cli_opt_count(const char *cmd, int argc, char **argv, int *i,
		     const char *name, uint32_t def, uint32_t *n);

/* Check the report options together once all are parsed (--metric and
** --stacks-per-source against the format, a binary format to a terminal)
** and fill in defaults (the text report's --top); 0, or MP_EXIT_ERROR
** after saying what is wrong. */
int mp_cli_check_opts(const char *cmd, mp_cli_opts *o);

/* -o FILE, --output FILE into ((mp_cli_opts *)ctx)->output: an opt()
** for mp_cli_file_args(); MP_OPT_*. */
int mp_cli_output_opt(const char *cmd, int argc, char **argv, int *i,
		      void *ctx);

/* Say that an option is unknown; returns MP_EXIT_ERROR. */
int mp_cli_unknown_opt(const char *cmd, const char *opt);

/* Parse "[OPTIONS] FILE": --help, report options if o is not NULL, and
** the options that opt() takes (it may be NULL; it returns MP_OPT_*).
** Returns -1 to go on with *path set, else an exit status (the manual was
** printed, or an error). */
int mp_cli_file_args(const char *cmd, int argc, char **argv, mp_cli_opts *o,
		     int (*opt)(const char *cmd, int argc, char **argv,
				int *i, void *ctx),
		     void *ctx, const char **path);

/* Parse "[OPTIONS] FILE..." as mp_cli_file_args() does, taking one FILE
** or more (*paths points into argv; free it), none of them twice
** (mp_cli_check_inputs()). */
int mp_cli_files_args(const char *cmd, int argc, char **argv,
		      mp_cli_opts *o,
		      int (*opt)(const char *cmd, int argc, char **argv,
				 int *i, void *ctx),
		      void *ctx, const char ***paths, int *n);

/* Print "--format" values for a manual: the renderers, one a line. */
void mp_cli_list_formats(FILE *out);

/* -- Reading (cli_read.c) ------------------------------------------------- */

/* Open path into *in and read it into *p (both must be freed by the caller
** unless MP_EXIT_ERROR is returned), keeping what o asks for beyond the
** report (o may be NULL). Returns MP_EXIT_OK; MP_EXIT_TRUNCATED after a
** warning (the data ends early or is damaged: what came before is in *p);
** or MP_EXIT_ERROR after the error line (not a profile, cannot be read,
** out of memory), with *in and *p freed. */
int mp_cli_read(const char *path, mp_input *in, mp_profile *p,
		const mp_cli_opts *o);

/* Read the profiles paths[0..n) into *p as one: the profile when n is 1,
** else their merge (analysis/mp_merge.h), each read on its own. Returns
** the worst status of the files as mp_cli_read() does; *p is freed on
** MP_EXIT_ERROR (a file that is not a profile or cannot be read). */
int mp_cli_read_all(const char *const *paths, int n, mp_profile *p,
		    const mp_cli_opts *o);

/* Read paths[0] and, if n is 2, paths[1] into p[0] and p[1] (as
** mp_cli_read(), the inputs closed), the second in a thread of its own:
** two cores read two profiles in the time of one. st[] gets the status
** of each (a profile is freed on MP_EXIT_ERROR). */
void mp_cli_read_two(const char *const *paths, int n, mp_profile *p,
		     const mp_cli_opts *o, int *st);

/* Classify how reading stopped (rc from the pass or the decoder, with r
** and the input) and print the warning or the error line; returns the
** exit status as mp_cli_read() does. */
int mp_cli_outcome(const char *path, int rc, const mp_reader *r,
		   const mp_input *in);

/* If the file at path shrank while it was read (in->shrunk: see
** mp_input_guard()), say so; the data read then ends early, so a command
** exits with MP_EXIT_TRUNCATED at least. */
void mp_cli_shrunk(const char *path, const mp_input *in);

/* Show a progress line on a terminal while a long read goes on (see
** cli_read.c); events(ctx) counts the events so far. */
void mp_cli_progress(mp_input *in, const char *path,
		     uint64_t (*events)(const void *ctx), const void *ctx);

/* Erase the progress line, if one was shown. */
void mp_cli_progress_end(mp_input *in);

/* Read the profiles paths[0..n) (merged if more than one) and print their
** report to o->output (or stdout), and the HTML report to o->html if
** set; returns the exit status. */
int mp_cli_report_files(const char *const *paths, int n,
			const mp_cli_opts *o);

/* An output of a command: a file, opened at once so that a bad path is
** said before a long read, or standard output. A file that exists is
** truncated only when the output begins (mp_cli_out_begin()), so that
** one an error comes before is left as it was. */
typedef struct mp_cli_out {
  const char *path;	/* NULL: standard output. */
  FILE *f;		/* NULL: none (html not asked for). */
  int created;		/* The file did not exist: opening made it. */
  int begun;		/* mp_cli_out_begin() truncated it. */
} mp_cli_out;

/* mp_cli_report_files() on outputs opened already (html->f NULL: none),
** which it closes, or drops if nothing was read. */
int mp_cli_report_to(const char *const *paths, int n, const mp_cli_opts *o,
		     mp_cli_out *out, mp_cli_out *html);

/* Whether output, a path about to be written, is the file input ("-":
** standard input): the same device and inode, so another name of it, a
** hard or a symbolic link count. An output that does not exist yet, or
** standard output (NULL or "-"), is no input. */
int mp_cli_same_file(const char *output, const char *input);

/* Whether output is the file open on descriptor fd (the same device and
** inode), and if regular is set, a regular file (a terminal or /dev/null
** shared by two outputs loses nothing). */
int mp_cli_same_fd(const char *output, int fd, int regular);

/* Refuse an input profile that paths[0..n) name twice: "-" twice, or two
** names of one file (the same device and inode: a hard or a symbolic
** link, or "-" with standard input redirected from a FILE also named),
** which would be counted twice, or read twice from one pipe. 0, or
** MP_EXIT_ERROR after saying which. A path that cannot be stat()ed is
** left for the read to report. Costs one stat() a path. */
int mp_cli_check_inputs(const char *cmd, const char *const *paths, int n);

/* Refuse an output (option opt, e.g. "-o") that is one of the input
** profiles paths[0..n), before anything is opened: 0, or MP_EXIT_ERROR
** after saying which. */
int mp_cli_check_output(const char *cmd, const char *opt, const char *output,
			const char *const *paths, int n);

/* Open path (NULL or "-": standard output) for writing, created if it
** does not exist, not truncated yet; 0, or -1 after saying why. */
int mp_cli_out_open(mp_cli_out *o, const char *path);

/* Begin writing: truncate the file if it is a regular one that existed;
** 0, or -1 after saying why (the output is then dropped). */
int mp_cli_out_begin(mp_cli_out *o);

/* Nothing to write: close the file and remove it if it was made or
** truncated here, leaving no empty file; a file not begun is left as it
** was. */
void mp_cli_out_drop(mp_cli_out *o);

/* Close the output (flush standard output); status, or MP_EXIT_ERROR
** after saying why writing failed. */
int mp_cli_out_close(mp_cli_out *o, int status);

/* Flush stdout; a failure (disk full, closed pipe) turns status into
** MP_EXIT_ERROR after saying so. */
int mp_cli_finish_output(int status);

#endif
