/* late_setsid.c: a child that leaves the command's session late, and is
 * left behind.  Usage: late_setsid PIDFILE [DELAY_MS].
 * The child stays in the command's session for DELAY_MS (default 200:
 * long enough for memsup's samples to see it there), then calls setsid(),
 * writes its pid to PIDFILE and sleeps; the main process waits for PIDFILE
 * and exits at once, so memsup kills the child as a leftover that had
 * escaped. */
#include "workload.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: late_setsid PIDFILE [DELAY_MS]\n");
		return 2;
	}
	long ms = wl_arg(argc, argv, 2, 200);
	pid_t c = fork();
	if (c < 0)
		wl_die("fork");
	if (c == 0) {
		char text[32];
		wl_sleep_ms(ms);
		if (setsid() < 0)
			wl_die("setsid");
		snprintf(text, sizeof text, "%d\n", (int)getpid());
		wl_write_file(argv[1], text);
		for (;;)
			pause();
	}
	for (int i = 0; i < 4000 && access(argv[1], F_OK) != 0; i++)
		wl_sleep_ms(5);
	return 0;
}
