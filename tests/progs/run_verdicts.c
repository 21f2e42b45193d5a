/* run_verdicts.c: what memsup's evidence reader (evidence/read.h) makes of
 * each evidence directory named on the command line: one line per
 * directory, tab-separated,
 *   DIR state answer source has_processes comparable images peak broken
 * (answer and peak as %.17g, "none" for none; images the count of
 * processes.json's images and peak the largest image's peak bytes, or
 * "none" / "error" when the run has no processes.json or it cannot be
 * read), or "DIR error" when resources.json cannot be read.
 * tests/python/test_readers_agree.py compares it with scripts/memsup.py's
 * read_run and read_processes on the same directories.  Exit 0, or 2 for
 * bad usage. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "evidence/read.h"

struct tally {
	size_t n;
	double peak;
};

static int tally_one(const struct evidence_process *p, void *ctx)
{
	struct tally *t = ctx;
	t->n++;
	if (p->peak_bytes > t->peak)
		t->peak = p->peak_bytes;
	return 0;
}

static void print_num(double v)
{
	if (isnan(v))
		printf("\tnone");
	else
		printf("\t%.17g", v);
}

static void verdict(const char *dir)
{
	struct evidence_run run;
	char err[400];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || evidence_read_run(dfd, &run, err, sizeof err) < 0) {
		printf("%s\terror\n", dir);
		if (dfd >= 0) {
			evidence_run_free(&run);
			close(dfd);
		}
		return;
	}
	printf("%s\t%s", dir, evidence_state_name(run.state));
	print_num(run.answer_mb);
	printf("\t%s\t%d\t%d", run.source ? run.source : "none", run.has_processes,
	       evidence_run_comparable(&run));
	struct tally t = { 0, -1 };
	if (!run.has_processes)
		printf("\tnone\tnone");
	else if (evidence_read_processes(dfd, tally_one, &t, err, sizeof err) < 0)
		printf("\terror\terror");
	else {
		printf("\t%zu", t.n);
		print_num(t.n ? t.peak : NAN);
	}
	printf("\t%s\n", run.broken);
	evidence_run_free(&run);
	close(dfd);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: run_verdicts DIR...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		verdict(argv[i]);
	return 0;
}
