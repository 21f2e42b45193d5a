/* report.h: `memsup report DIR...`, one row per evidence directory, to
 * compare the runs of a sweep (see man/memsup-report.1).
 *
 * Reads only: resources.json and processes.json of each DIR, with the
 * strict reader (jsonr.h).  A directory that is missing, half-written,
 * still running or unreadable is a row whose status says so; it never stops
 * the other rows.
 *
 * preload/report.h (the shim's exit report) has the same file name: include
 * this one by its path under supervisor/, "output/report.h". */
#ifndef MEMSUP_REPORT_H
#define MEMSUP_REPORT_H

/* argv[0] is "report".  Writes the report on stdout, messages on stderr.
 * Returns memsup's exit status: 0 when every row is ok or running, 1 when at
 * least one row is broken, 125 on bad usage (nothing written on stdout) or
 * when stdout cannot be written.  Never exits. */
int report_main(int argc, char **argv);

#endif /* MEMSUP_REPORT_H */
