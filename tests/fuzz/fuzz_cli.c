/* fuzz_cli.c: libFuzzer harness for memsup's command line parser
 * (supervisor/cli.h).
 *
 * The input is split on NUL bytes into argv[0], argv[1], ... (each string
 * in its own exact-size allocation, so ASan sees any read past its NUL;
 * argv[0] is fuzzed too: execve lets it be anything, even empty).
 * cli_parse must never crash, must never create anything (it runs in an
 * empty temporary directory, checked empty after every parse), and when it
 * accepts, the options must satisfy what cli.h documents: budgets 0 or
 * positive and finite and within their ranges, a --mem-max of 0.1 to 1e9
 * MB and never with --cgroup off, a poll period within its range, a
 * non-empty command
 * that is the tail of argv, -e entries that are KEY=VALUE with a non-empty
 * KEY, an absolute --cwd that is a directory, an --out that does not exist.
 * A refusal must come with a message.  Parsing the same argv twice gives the
 * same result (getopt's global state is reset).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "base/number.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_cli: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

#define MAX_ARGS 64

static char workdir[PATH_MAX];
static int home_fd = -1;

static void workdir_remove(void)
{
	rmdir(workdir);
}

/* The parse runs inside workdir, but libFuzzer itself keeps the caller's
 * directory: relative corpus and reproducer paths must keep working. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *tmp = getenv("TMPDIR");
	snprintf(workdir, sizeof workdir, "%s/fuzz_cli.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	home_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (home_fd < 0 || !mkdtemp(workdir)) {
		perror("fuzz_cli: temporary directory");
		abort();
	}
	atexit(workdir_remove);
	return 0;
}

static void check_workdir_empty(void)
{
	DIR *d = opendir(".");
	struct dirent *e;
	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			fprintf(stderr, "fuzz_cli: cli_parse created '%s'\n", e->d_name);
			abort();
		}
	}
	closedir(d);
}

static int budget_ok(double v)
{
	return v == 0 || (isfinite(v) && v > 0);
}

/* p points into one of the argument strings (an option's value may follow
 * "--env=" inside its word). */
static int in_argv(char **argv, int argc, const char *p)
{
	for (int i = 0; i < argc; i++)
		if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
			return 1;
	return 0;
}

static void check_accepted(const struct sup_options *o, int argc, char **argv)
{
	if (o->help || o->version)
		return; /* printed by main, nothing else used */
	CHECK(budget_ok(o->wall_s));
	CHECK(budget_ok(o->rss_mb));
	CHECK(budget_ok(o->grace_s));
	CHECK(isfinite(o->poll_ms) && o->poll_ms > 0);
	/* the ranges cli.c promises (memsup(1)): what the clock and the machine
	 * can mean, so no value turns into another one downstream */
	CHECK(o->wall_s <= 1e8 && o->rss_mb <= 1e9 && o->grace_s <= 86400);
	CHECK(o->poll_ms >= 0.1 && o->poll_ms <= 60000);
	CHECK(o->max_procs <= 4194304);
	CHECK(o->wall_s == 0 || (uint64_t)(o->wall_s * 1e9) / 1000000000u <= 100000000u);
	CHECK(o->discovery == TREE_AUTO || o->discovery == TREE_CHILDREN ||
	      o->discovery == TREE_SCAN);
	CHECK(!(o->follow_env && o->no_trace));
	CHECK(relay_mode_name(o->output) != NULL);
	/* a memory limit is a byte count of at least a page, and needs a cgroup */
	CHECK(o->mem_max_mb == 0 || (o->mem_max_mb >= 0.1 && o->mem_max_mb <= 1e9));
	CHECK(o->cgroup == CONTAIN_AUTO || o->cgroup == CONTAIN_OFF);
	CHECK(!(o->mem_max_mb > 0 && o->cgroup == CONTAIN_OFF));
	CHECK(o->command != NULL);
	CHECK(o->command_argc >= 1 && o->command_argc < argc);
	CHECK(o->command == argv + (argc - o->command_argc));
	CHECK(o->command[o->command_argc] == NULL);
	CHECK(o->command[0][0] != '\0');
	CHECK(o->n_env <= (size_t)argc);
	for (size_t i = 0; i < o->n_env; i++) {
		CHECK(in_argv(argv, argc, o->env[i]));
		const char *eq = strchr(o->env[i], '=');
		CHECK(eq != NULL && eq != o->env[i]);
	}
	CHECK(memchr(o->cwd, '\0', sizeof o->cwd) != NULL);
	if (o->cwd[0]) {
		struct stat st;
		CHECK(o->cwd[0] == '/');
		CHECK(stat(o->cwd, &st) == 0 && S_ISDIR(st.st_mode));
	}
	if (o->out) {
		struct stat st;
		CHECK(o->out[0] != '\0');
		CHECK(in_argv(argv, argc, o->out));
		CHECK(lstat(o->out, &st) != 0 && errno == ENOENT);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 1];
	int argc = 0;
	size_t start = 0;

	/* An empty input is argc 0 (execve allows it). */
	while (size && start <= size && argc < MAX_ARGS) {
		const uint8_t *nul = memchr(data + start, '\0', size - start);
		size_t end = nul ? (size_t)(nul - data) : size;
		argv[argc] = malloc(end - start + 1);
		CHECK(argv[argc] != NULL);
		memcpy(argv[argc], data + start, end - start);
		argv[argc][end - start] = '\0';
		argc++;
		start = end + 1;
		if (!nul)
			break;
	}
	argv[argc] = NULL;

	struct sup_options o1, o2;
	char err1[256], err2[256];
	memset(err1, 'x', sizeof err1);
	CHECK(chdir(workdir) == 0);
	int rc1 = cli_parse(argc, argv, &o1, err1, sizeof err1);
	check_workdir_empty();
	CHECK(rc1 == 0 || rc1 == -1);
	CHECK(memchr(err1, '\0', sizeof err1) != NULL);
	if (rc1 == 0)
		check_accepted(&o1, argc, argv);
	else
		CHECK(err1[0] != '\0'); /* a refusal says why */

	int rc2 = cli_parse(argc, argv, &o2, err2, sizeof err2);
	CHECK(rc2 == rc1);
	if (rc1 == 0) {
		CHECK(o1.command == o2.command && o1.n_env == o2.n_env &&
		      o1.help == o2.help && o1.version == o2.version);
	} else {
		CHECK(strcmp(err1, err2) == 0);
	}
	cli_free(&o1);
	cli_free(&o2);
	CHECK(fchdir(home_fd) == 0);

	/* The number reader alone, on every argument: what it accepts is a
	 * plain decimal inside the range, and it agrees with strtod. */
	for (int i = 0; i < argc; i++) {
		double v = -1;
		uint64_t n = 0;
		if (number_real(argv[i], 0, 1, 1e9, &v) == 0) {
			CHECK(isfinite(v) && v > 0 && v <= 1e9);
			CHECK(v == strtod(argv[i], NULL));
			for (const char *p = argv[i]; *p; p++)
				CHECK((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' ||
				      *p == '+' || *p == '-');
		}
		if (number_count(argv[i], 1, 4194304, &n) == 0)
			CHECK(n >= 1 && n <= 4194304 && n == strtoull(argv[i], NULL, 10));
	}
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return 0;
}
