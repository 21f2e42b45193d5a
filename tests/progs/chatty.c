/* chatty.c: write BYTES (default 20000000) of a known pattern to stdout --
 * byte i is 'a' + i % 26, with '\n' at every i % 64 == 63 -- in uneven
 * chunks, then "chatty: done\n" to stderr.  Usage: chatty [BYTES]. */
#include "workload.h"

static char pattern_at(size_t i)
{
	return i % 64 == 63 ? '\n' : (char)('a' + i % 26);
}

int main(int argc, char **argv)
{
	size_t total = (size_t)wl_arg(argc, argv, 1, 20000000), done = 0;
	static char buf[70000];
	while (done < total) {
		size_t n = 1 + (done * 7919) % (sizeof buf - 1); /* uneven writes */
		if (n > total - done)
			n = total - done;
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern_at(done + i);
		for (size_t w = 0; w < n;) {
			ssize_t r = write(STDOUT_FILENO, buf + w, n - w);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				wl_die("write");
			}
			w += (size_t)r;
		}
		done += n;
	}
	static const char tail[] = "chatty: done\n";
	if (write(STDERR_FILENO, tail, sizeof tail - 1) < 0)
		wl_die("write");
	return 0;
}
