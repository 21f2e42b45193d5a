/* commands.h: memsup's subcommands, the front ends main.c dispatches to
 * (`memsup plot|flame|report|diff ...`).
 *
 * Each owns its command line -- usage text, options (declared as a
 * subcmd.h table), messages and exit status -- in a cmd_NAME.c of its
 * own, and calls view/ for the work (reading through evidence/read.h,
 * comparing, drawing and writing).  argv[0] is the subcommand's name.
 * Each writes its result on stdout or into files, its messages on
 * stderr ("memsup NAME: ..."), and returns memsup's exit status; none
 * exits.  Bad usage is 125 with nothing written.
 */
#ifndef MEMSUP_COMMANDS_H
#define MEMSUP_COMMANDS_H

/* `memsup plot DIR [--width N] [--height N] [-o FILE|-] [-h]`: 0, or 125
 * with a message on stderr (nothing is written then).  man/memsup-plot.1 */
int plot_main(int argc, char **argv);

/* `memsup flame DIR [--at total|heap|rss] [--width N] [-o FILE|-] [--folded
 * FILE|-] [-h]`: 0, or 125 with a message on stderr.  man/memsup-flame.1 */
int flame_main(int argc, char **argv);

/* `memsup report [--csv|--json] [--sort KEY] [--reverse] DIR...`: the
 * report on stdout; 0 when every row is ok or running, 1 when at least one
 * row is broken, 125 on bad usage (nothing written on stdout) or when
 * stdout cannot be written.  man/memsup-report.1 */
int report_main(int argc, char **argv);

/* `memsup diff [OPTIONS] BASE NEW`: the verdict on stdout (or --json),
 * JUnit XML to --junit FILE; 0 (no regression), 1 (a regression) or 125
 * (bad usage or input: nothing written, nothing created).  memsup(1), DIFF */
int diff_main(int argc, char **argv);

#endif /* MEMSUP_COMMANDS_H */
