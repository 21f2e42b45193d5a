/* test_sdbus.c: memsup's D-Bus client for systemd's private socket
 * (supervisor/contain/sdbus.h).  A method call's bytes against ones worked
 * out by hand from the D-Bus specification's marshalling rules; replies
 * written here byte by byte (not by the writer under test) parsed; and the
 * whole exchange against a fake manager on a unix socket: the EXTERNAL
 * authentication, a signal before the reply passed over, an error reply,
 * a refusal, a hang-up and a manager that never answers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "contain/sdbus.h"

/* ---- a message's bytes ------------------------------------------------------- */

Test(sdbus, a_call_is_marshalled_as_the_specification_says)
{
	struct sdbus_msg m;
	sdbus_call(&m, "d", "/p", "i", "m", "u");
	sdbus_put_u32(&m, 7);
	cr_assert_eq(sdbus_finish(&m, 1), 0);
	/* fixed header; then the fields, each a struct at an 8-byte boundary:
	 * code, variant signature, value (a string's length word 4-aligned) */
	static const unsigned char want[] = {
		'l', 1, 0, 1, 4, 0, 0, 0, 1, 0, 0, 0, 71, 0, 0, 0,
		1, 1, 'o', 0, 2, 0, 0, 0, '/', 'p', 0, 0, 0, 0, 0, 0,     /* PATH */
		2, 1, 's', 0, 1, 0, 0, 0, 'i', 0, 0, 0, 0, 0, 0, 0,       /* INTERFACE */
		3, 1, 's', 0, 1, 0, 0, 0, 'm', 0, 0, 0, 0, 0, 0, 0,       /* MEMBER */
		6, 1, 's', 0, 1, 0, 0, 0, 'd', 0, 0, 0, 0, 0, 0, 0,       /* DESTINATION */
		8, 1, 'g', 0, 1, 'u', 0, 0,                               /* SIGNATURE, pad */
		7, 0, 0, 0,                                               /* the body */
	};
	cr_assert_eq(m.len, sizeof want);
	cr_assert_eq(memcmp(m.buf, want, sizeof want), 0);
	cr_assert_eq(sdbus_msg_len(m.buf), sizeof want);
}

Test(sdbus, arrays_count_their_bytes_and_not_the_padding_before_them)
{
	struct sdbus_msg m;
	sdbus_call(&m, "d", "/p", "i", "m", "a(sv)a(sv)");
	size_t body = m.body;
	sdbus_array_begin(&m, 8);  /* one entry: ("k", <b true>) */
	sdbus_struct(&m);
	sdbus_put_str(&m, "k");
	sdbus_variant(&m, "b");
	sdbus_put_bool(&m, 1);
	sdbus_array_end(&m);
	sdbus_array_begin(&m, 8);  /* empty: length 0, padding still there */
	sdbus_array_end(&m);
	cr_assert_eq(sdbus_finish(&m, 9), 0);
	const unsigned char *b = m.buf + body;
	/* length word, then the struct at 8: "k" (4+2 bytes), the variant's
	 * signature at 14 (3 bytes), the bool at 20 (4): 16 bytes of element */
	cr_expect_eq(b[0], 16);
	cr_expect_eq(b[8], 1);
	cr_expect_eq(memcmp(b + 12, "k", 2), 0);
	cr_expect_eq(b[14], 1);
	cr_expect_eq(b[15], 'b');
	cr_expect_eq(b[20], 1);
	/* the second array's length at 24, its padding to 32, nothing after */
	cr_expect_eq(b[24], 0);
	cr_expect_eq(m.len - body, 32u);
}

Test(sdbus, an_unclosed_array_or_an_overflow_is_never_sent)
{
	struct sdbus_msg m;
	sdbus_call(&m, "d", "/p", "i", "m", "as");
	sdbus_array_begin(&m, 4);
	cr_expect_eq(sdbus_finish(&m, 1), -EINVAL);
	sdbus_array_end(&m);
	char big[600];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	for (int i = 0; i < 8; i++)
		sdbus_put_str(&m, big);
	cr_expect_eq(sdbus_finish(&m, 1), -EMSGSIZE);
	cr_expect_eq(sdbus_finish(&m, 0), -EMSGSIZE);
}

/* ---- replies, written by hand ------------------------------------------------ */

struct out {
	unsigned char b[512];
	size_t n;
};

static void o_pad(struct out *o, size_t a)
{
	while (o->n % a)
		o->b[o->n++] = 0;
}

static void o_u32(struct out *o, unsigned v)
{
	o_pad(o, 4);
	for (int i = 0; i < 4; i++)
		o->b[o->n++] = (unsigned char)(v >> (8 * i));
}

static void o_str(struct out *o, const char *s)
{
	o_u32(o, (unsigned)strlen(s));
	memcpy(o->b + o->n, s, strlen(s) + 1);
	o->n += strlen(s) + 1;
}

/* A message of `type`: REPLY_SERIAL when reply_to, ERROR_NAME when err,
 * and a body of one string when text. */
static size_t reply(unsigned char *buf, int type, unsigned reply_to, const char *err,
		    const char *text)
{
	struct out o = { .n = 16 };
	if (reply_to) {
		o_pad(&o, 8);
		o.b[o.n++] = 5;
		o.b[o.n++] = 1;
		o.b[o.n++] = 'u';
		o.b[o.n++] = 0;
		o_u32(&o, reply_to);
	}
	if (err) {
		o_pad(&o, 8);
		o.b[o.n++] = 4;
		o.b[o.n++] = 1;
		o.b[o.n++] = 's';
		o.b[o.n++] = 0;
		o_str(&o, err);
	}
	if (text) {
		o_pad(&o, 8);
		o.b[o.n++] = 8;
		o.b[o.n++] = 1;
		o.b[o.n++] = 'g';
		o.b[o.n++] = 0;
		o.b[o.n++] = 1;
		o.b[o.n++] = 's';
		o.b[o.n++] = 0;
	}
	size_t fields = o.n - 16;
	o_pad(&o, 8);
	size_t body = o.n;
	if (text)
		o_str(&o, text);
	unsigned char head[16] = { 'l', (unsigned char)type, 0, 1 };
	struct out h = { .n = 4 };
	o_u32(&h, (unsigned)(o.n - body));
	o_u32(&h, 77);
	o_u32(&h, (unsigned)fields);
	memcpy(o.b, head, 4);
	memcpy(o.b + 4, h.b + 4, 12);
	memcpy(buf, o.b, o.n);
	return o.n;
}

Test(sdbus, replies_say_their_type_serial_error_and_text)
{
	unsigned char b[512];
	struct sdbus_reply r;
	unsigned serial;
	size_t n = reply(b, 2, 5, NULL, "/org/freedesktop/systemd1/job/42");
	cr_assert_eq(sdbus_msg_len(b), n);
	cr_assert_eq(sdbus_parse(b, n, &serial, &r), 0);
	cr_expect_eq(r.type, 2);
	cr_expect_eq(serial, 5u);
	cr_expect_str_eq(r.text, "/org/freedesktop/systemd1/job/42");
	cr_expect_str_eq(r.error_name, "");
	n = reply(b, 3, 6, "org.freedesktop.systemd1.UnitExists", "Unit memsup-1.scope exists");
	cr_assert_eq(sdbus_parse(b, n, &serial, &r), 0);
	cr_expect_eq(r.type, 3);
	cr_expect_eq(serial, 6u);
	cr_expect_str_eq(r.error_name, "org.freedesktop.systemd1.UnitExists");
	cr_expect_str_eq(r.text, "Unit memsup-1.scope exists");
}

Test(sdbus, malformed_replies_are_refused_never_overread)
{
	unsigned char b[512], cut[512];
	struct sdbus_reply r;
	unsigned serial;
	size_t n = reply(b, 3, 6, "a.b.C", "why");
	/* every length short of the whole, and a big-endian one */
	for (size_t k = 0; k < n; k++) {
		memcpy(cut, b, k);
		cr_expect_eq(sdbus_parse(cut, k, &serial, &r), -EPROTO, "cut at %zu", k);
	}
	b[0] = 'B';
	cr_expect_eq(sdbus_msg_len(b), 0u);
	cr_expect_eq(sdbus_parse(b, n, &serial, &r), -EPROTO);
	/* a string length that runs past the message */
	n = reply(b, 3, 6, "a.b.C", "why");
	b[n - 4 - 4] = 200;
	cr_expect_eq(sdbus_parse(b, n, &serial, &r), -EPROTO);
}

/* ---- against a fake manager --------------------------------------------------- */

enum act { ANSWER, REFUSE, HANG_UP, SILENT };

struct fake {
	char path[108];
	int lfd;
	enum act act;
	char auth[128];            /* the authentication line it got */
	char member[64];           /* the call's member, found in its bytes */
};

static void *serve(void *arg)
{
	struct fake *f = arg;
	int fd = accept(f->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	char c;
	size_t n = 0;
	if (read(fd, &c, 1) != 1 || c != '\0')
		goto out;
	while (n < sizeof f->auth - 1 && read(fd, &f->auth[n], 1) == 1 && f->auth[n++] != '\n')
		;
	if (f->act == REFUSE) {
		(void)!write(fd, "REJECTED EXTERNAL\r\n", 19);
		goto out;
	}
	if (f->act == HANG_UP)
		goto out;
	(void)!write(fd, "OK 0123456789abcdef\r\n", 21);
	char begin[7];
	if (read(fd, begin, 7) != 7 || memcmp(begin, "BEGIN\r\n", 7) != 0)
		goto out;
	unsigned char msg[4096];
	size_t got = 0, want = 16;
	while (got < want) {
		ssize_t k = read(fd, msg + got, want - got);
		if (k <= 0)
			goto out;
		got += (size_t)k;
		if (got == 16 && (want = sdbus_msg_len(msg)) == 0)
			goto out;
	}
	void *m = memmem(msg, got, "StartTransientUnit", 18);
	if (m)
		snprintf(f->member, sizeof f->member, "StartTransientUnit");
	if (f->act == SILENT) {
		sleep(1);
		goto out;
	}
	unsigned char r[512];
	size_t k = reply(r, 4, 0, NULL, NULL); /* a signal first: not the reply */
	(void)!write(fd, r, k);
	k = reply(r, 3, 3, "org.freedesktop.DBus.Error.AccessDenied", "not for you");
	(void)!write(fd, r, k);
out:
	close(fd);
	return NULL;
}

static struct fake *fake_start(enum act act, pthread_t *t)
{
	struct fake *f = calloc(1, sizeof *f);
	snprintf(f->path, sizeof f->path, "/tmp/test_sdbus.%d.%d", (int)getpid(), (int)act);
	unlink(f->path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(f->lfd >= 0);
	cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(listen(f->lfd, 1), 0);
	f->act = act;
	cr_assert_eq(pthread_create(t, NULL, serve, f), 0);
	return f;
}

static void fake_stop(struct fake *f, pthread_t t)
{
	pthread_join(t, NULL);
	close(f->lfd);
	unlink(f->path);
	free(f);
}

static double since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

Test(sdbus, the_reply_to_our_call_is_found_past_other_messages)
{
	pthread_t t;
	struct fake *f = fake_start(ANSWER, &t);
	int fd = sdbus_connect(f->path, 1001, 2000);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	struct sdbus_msg m;
	struct sdbus_reply r;
	sdbus_call(&m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
		   "org.freedesktop.systemd1.Manager", "StartTransientUnit", "");
	cr_assert_eq(sdbus_roundtrip(fd, &m, 3, &r), 0);
	close(fd);
	pthread_join(t, NULL);
	/* the EXTERNAL line names the uid as hex of its decimal digits:
	 * "1001" is 31 30 30 31 */
	cr_expect_str_eq(f->auth, "AUTH EXTERNAL 31303031\r\n");
	cr_expect_str_eq(f->member, "StartTransientUnit");
	close(f->lfd);
	unlink(f->path);
	free(f);
	cr_expect_eq(r.type, 3);
	cr_expect_str_eq(r.error_name, "org.freedesktop.DBus.Error.AccessDenied");
	cr_expect_str_eq(r.text, "not for you");
}

Test(sdbus, refusal_hang_up_and_silence_are_errors_in_bounded_time)
{
	pthread_t t;
	struct fake *f = fake_start(REFUSE, &t);
	cr_expect_eq(sdbus_connect(f->path, 0, 2000), -EACCES);
	fake_stop(f, t);
	f = fake_start(HANG_UP, &t);
	cr_expect_eq(sdbus_connect(f->path, 0, 2000), -ECONNRESET);
	fake_stop(f, t);
	cr_expect_eq(sdbus_connect("/nonexistent/socket", 0, 100), -ENOENT);
	/* a manager that takes the call and says nothing for 1 s: given up
	 * after the 200 ms bound, not waited on */
	f = fake_start(SILENT, &t);
	int fd = sdbus_connect(f->path, 0, 200);
	cr_assert_geq(fd, 0);
	struct sdbus_msg m;
	struct sdbus_reply r;
	sdbus_call(&m, "d", "/p", "i", "StartTransientUnit", "");
	struct timespec a;
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_expect_eq(sdbus_roundtrip(fd, &m, 1, &r), -ETIMEDOUT);
	double took = since(&a);
	cr_expect(took >= 0.15 && took < 0.9, "gave up after %.3f s", took);
	close(fd);
	fake_stop(f, t);
}
