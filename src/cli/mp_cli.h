/*
** mp_cli.h: what the subcommands of the ljmemprof command share.
*/

#ifndef MP_CLI_H
#define MP_CLI_H

#include "render/mp_render.h"

/* Exit statuses (documented in --help and docs/REPORT.md). */
#define MP_EXIT_OK		0	/* Complete profile, all reported. */
#define MP_EXIT_ERROR		2	/* Usage, I/O or bad data. */
#define MP_EXIT_TRUNCATED	3	/* Cut short; reported up to the cut. */

/* Options of the report-printing subcommands. */
typedef struct mp_cli_opts {
  mp_report_opts rep;
  int json;		/* --format json. */
} mp_cli_opts;

/* Result of parsing one report option at argv[*i]. */
enum { MP_OPT_NONE, MP_OPT_TAKEN, MP_OPT_ERROR };

/* Parse a report option (--format, --sort, --top, --leak-only,
** --human-readable) at argv[*i], advancing *i past its argument. Prints
** the error itself (cmd names the subcommand). */
int mp_cli_report_opt(const char *cmd, int argc, char **argv, int *i,
		      mp_cli_opts *o);

/* Read path and print its report to stdout; returns the exit status. */
int mp_cli_report_file(const char *path, const mp_cli_opts *o);

/* ljmemprof run ... (cmd_run.c). */
int mp_cli_run(int argc, char **argv);
extern const char mp_help_run[];

#endif
