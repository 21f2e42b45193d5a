/* sdbus.c: one method call to a systemd manager over its private socket
 * (sdbus.h).  The writer is a cursor over a fixed buffer; the reader takes
 * a whole message and walks its header fields. */
#include "contain/sdbus.h"
#include "invariant.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* The D-Bus header's fixed part: endianness, type, flags, version, body
 * length, serial; then the header fields' array length. */
#define HEAD_BYTES 16u
#define MSG_MAX (1u << 20)
/* Messages read while waiting for the reply before giving up: systemd sends
 * signals only to a peer that subscribed, so one is the usual count. */
#define MAX_MESSAGES 64

enum { TYPE_CALL = 1, TYPE_RETURN = 2, TYPE_ERROR = 3 };
enum {
	FIELD_PATH = 1, FIELD_INTERFACE = 2, FIELD_MEMBER = 3, FIELD_ERROR_NAME = 4,
	FIELD_REPLY_SERIAL = 5, FIELD_DESTINATION = 6, FIELD_SIGNATURE = 8,
};

/* ---- writing ------------------------------------------------------------------ */

static void put_bytes(struct sdbus_msg *m, const void *p, size_t n)
{
	if (m->overflow || n > SDBUS_MSG_CAP - m->len) {
		m->overflow = 1;
		return;
	}
	memcpy(m->buf + m->len, p, n);
	m->len += n;
}

/* Zeros up to the next multiple of a (alignment is from the message's
 * first byte, and the body starts 8-aligned). */
static void pad(struct sdbus_msg *m, size_t a)
{
	static const uint8_t zeros[8];
	put_bytes(m, zeros, (a - m->len % a) % a);
}

static void put_u8(struct sdbus_msg *m, uint8_t v)
{
	put_bytes(m, &v, 1);
}

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void sdbus_put_u32(struct sdbus_msg *m, uint32_t v)
{
	uint8_t b[4];
	pad(m, 4);
	le32(b, v);
	put_bytes(m, b, 4);
}

void sdbus_put_bool(struct sdbus_msg *m, int v)
{
	sdbus_put_u32(m, v ? 1 : 0);
}

void sdbus_put_str(struct sdbus_msg *m, const char *s)
{
	size_t n = strlen(s);
	sdbus_put_u32(m, (uint32_t)n);
	put_bytes(m, s, n + 1);
}

void sdbus_put_sig(struct sdbus_msg *m, const char *s)
{
	size_t n = strlen(s);
	if (n > 255) {
		m->overflow = 1;
		return;
	}
	put_u8(m, (uint8_t)n);
	put_bytes(m, s, n + 1);
}

void sdbus_array_begin(struct sdbus_msg *m, size_t align)
{
	if (m->depth >= SDBUS_MAX_DEPTH) {
		m->overflow = 1;
		return;
	}
	sdbus_put_u32(m, 0); /* the length, written by sdbus_array_end */
	m->open[m->depth] = m->len - 4;
	/* the padding to the first element is there even in an empty array,
	 * and is not counted in its length */
	pad(m, align);
	m->open_start[m->depth++] = m->len;
}

void sdbus_array_end(struct sdbus_msg *m)
{
	MT_ASSERT(m->depth > 0 || m->overflow);
	if (m->depth == 0 || m->overflow)
		return;
	m->depth--;
	le32(m->buf + m->open[m->depth], (uint32_t)(m->len - m->open_start[m->depth]));
}

void sdbus_struct(struct sdbus_msg *m)
{
	pad(m, 8);
}

void sdbus_variant(struct sdbus_msg *m, const char *sig)
{
	sdbus_put_sig(m, sig);
}

/* One header field: a struct of a byte code and a variant. */
static void field_str(struct sdbus_msg *m, uint8_t code, const char *type, const char *value)
{
	sdbus_struct(m);
	put_u8(m, code);
	sdbus_variant(m, type);
	if (type[0] == 'g')
		sdbus_put_sig(m, value);
	else
		sdbus_put_str(m, value);
}

void sdbus_call(struct sdbus_msg *m, const char *dest, const char *path, const char *iface,
		const char *member, const char *sig)
{
	m->len = m->body = m->depth = 0;
	m->overflow = 0;
	/* little-endian, a method call, no flags, protocol 1; the body length
	 * and the serial are written by sdbus_finish */
	static const uint8_t fixed[12] = { 'l', TYPE_CALL, 0, 1 };
	put_bytes(m, fixed, sizeof fixed);
	sdbus_array_begin(m, 8);
	field_str(m, FIELD_PATH, "o", path);
	field_str(m, FIELD_INTERFACE, "s", iface);
	field_str(m, FIELD_MEMBER, "s", member);
	field_str(m, FIELD_DESTINATION, "s", dest);
	if (sig[0])
		field_str(m, FIELD_SIGNATURE, "g", sig);
	sdbus_array_end(m);
	pad(m, 8);
	m->body = m->len;
}

int sdbus_finish(struct sdbus_msg *m, uint32_t serial)
{
	if (m->overflow)
		return -EMSGSIZE;
	if (m->depth != 0 || serial == 0)
		return -EINVAL;
	MT_ASSERT(m->body >= HEAD_BYTES && m->body % 8 == 0 && m->len >= m->body);
	le32(m->buf + 4, (uint32_t)(m->len - m->body));
	le32(m->buf + 8, serial);
	return 0;
}

/* ---- reading ------------------------------------------------------------------ */

size_t sdbus_msg_len(const uint8_t head[16])
{
	if (head[0] != 'l' || head[3] != 1)
		return 0;
	uint64_t fields = get_le32(head + 12), body = get_le32(head + 4);
	uint64_t total = ((HEAD_BYTES + fields + 7) & ~(uint64_t)7) + body;
	return total > MSG_MAX ? 0 : (size_t)total;
}

/* A cursor over a message being read. */
struct rd {
	const uint8_t *p;
	size_t len, at;
};

static int rd_align(struct rd *r, size_t a)
{
	size_t to = (r->at + a - 1) / a * a;
	if (to > r->len)
		return -EPROTO;
	r->at = to;
	return 0;
}

static int rd_u8(struct rd *r, uint8_t *v)
{
	if (r->at >= r->len)
		return -EPROTO;
	*v = r->p[r->at++];
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *v)
{
	if (rd_align(r, 4) < 0 || r->len - r->at < 4)
		return -EPROTO;
	*v = get_le32(r->p + r->at);
	r->at += 4;
	return 0;
}

/* A string of n bytes and its NUL at the cursor, copied (cut to cap). */
static int rd_text(struct rd *r, size_t n, char *out, size_t cap)
{
	if (r->len - r->at < n + 1 || r->p[r->at + n] != '\0')
		return -EPROTO;
	if (out && cap) {
		size_t k = n < cap - 1 ? n : cap - 1;
		memcpy(out, r->p + r->at, k);
		out[k] = '\0';
	}
	r->at += n + 1;
	return 0;
}

static int rd_str(struct rd *r, char *out, size_t cap)
{
	uint32_t n;
	return rd_u32(r, &n) < 0 ? -EPROTO : rd_text(r, n, out, cap);
}

static int rd_sig(struct rd *r, char *out, size_t cap)
{
	uint8_t n;
	return rd_u8(r, &n) < 0 ? -EPROTO : rd_text(r, n, out, cap);
}

int sdbus_parse(const uint8_t *msg, size_t len, uint32_t *reply_serial, struct sdbus_reply *out)
{
	if (len < HEAD_BYTES || sdbus_msg_len(msg) != len)
		return -EPROTO;
	memset(out, 0, sizeof *out);
	*reply_serial = 0;
	out->type = msg[1];
	uint32_t fields = get_le32(msg + 12);
	struct rd r = { msg, HEAD_BYTES + (size_t)fields, HEAD_BYTES };
	char body_sig[256] = "";
	while (r.at < r.len) {
		uint8_t code;
		char type[8];
		if (rd_align(&r, 8) < 0)
			return -EPROTO;
		if (r.at == r.len)
			break;
		if (rd_u8(&r, &code) < 0 || rd_sig(&r, type, sizeof type) < 0)
			return -EPROTO;
		int rc;
		switch (type[0]) {
		case 's':
		case 'o':
			rc = rd_str(&r, code == FIELD_ERROR_NAME ? out->error_name : NULL,
				    sizeof out->error_name);
			break;
		case 'g':
			rc = rd_sig(&r, code == FIELD_SIGNATURE ? body_sig : NULL, sizeof body_sig);
			break;
		case 'u': {
			uint32_t v;
			rc = rd_u32(&r, &v);
			if (code == FIELD_REPLY_SERIAL)
				*reply_serial = v;
			break;
		}
		case 'y': {
			uint8_t v;
			rc = rd_u8(&r, &v);
			break;
		}
		default:
			return -EPROTO; /* no header field has another type */
		}
		if (rc < 0 || type[1] != '\0')
			return -EPROTO;
	}
	/* the body: its first value, when it is a string */
	struct rd b = { msg, len, (HEAD_BYTES + (size_t)fields + 7) & ~(size_t)7 };
	if ((body_sig[0] == 's' || body_sig[0] == 'o') && rd_str(&b, out->text, sizeof out->text) < 0)
		return -EPROTO;
	return 0;
}

/* ---- the socket ----------------------------------------------------------------- */

static int send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int recv_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n > 0) {
		ssize_t k = recv(fd, b, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (k == 0)
			return -ECONNRESET;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The authentication: a NUL byte, then SASL lines (the D-Bus
 * specification's "Authentication Protocol"): EXTERNAL with our uid in
 * hex-encoded decimal, which the server checks against SO_PEERCRED. */
static int authenticate(int fd, unsigned uid)
{
	char dec[16], line[128];
	int n = snprintf(dec, sizeof dec, "%u", uid);
	size_t o = 0;
	line[o++] = '\0';
	o += (size_t)snprintf(line + o, sizeof line - o, "AUTH EXTERNAL ");
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(line + o, sizeof line - o, "%02x", (unsigned char)dec[i]);
	o += (size_t)snprintf(line + o, sizeof line - o, "\r\n");
	int rc = send_all(fd, line, o);
	if (rc < 0)
		return rc;
	/* the answer is one line, and the server says nothing more before
	 * BEGIN, so reading up to its end takes nothing of what follows */
	size_t got = 0;
	while (got < 2 || line[got - 2] != '\r' || line[got - 1] != '\n') {
		if (got == sizeof line - 1)
			return -EPROTO;
		if ((rc = recv_all(fd, line + got, 1)) < 0)
			return rc;
		got++;
	}
	if (strncmp(line, "OK ", 3) != 0)
		return strncmp(line, "REJECTED", 8) == 0 ? -EACCES : -EPROTO;
	return send_all(fd, "BEGIN\r\n", 7);
}

int sdbus_connect(const char *path, unsigned uid, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int rc = 0;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		rc = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
	if (rc == 0)
		rc = authenticate(fd, uid);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int sdbus_roundtrip(int fd, struct sdbus_msg *m, uint32_t serial, struct sdbus_reply *r)
{
	int rc = sdbus_finish(m, serial);
	if (rc < 0 || (rc = send_all(fd, m->buf, m->len)) < 0)
		return rc;
	for (int i = 0; i < MAX_MESSAGES; i++) {
		uint8_t head[HEAD_BYTES];
		if ((rc = recv_all(fd, head, sizeof head)) < 0)
			return rc;
		size_t len = sdbus_msg_len(head);
		if (len < HEAD_BYTES)
			return -EPROTO;
		uint8_t *msg = malloc(len);
		if (!msg)
			return -ENOMEM;
		memcpy(msg, head, sizeof head);
		uint32_t to = 0;
		rc = recv_all(fd, msg + HEAD_BYTES, len - HEAD_BYTES);
		if (rc == 0)
			rc = sdbus_parse(msg, len, &to, r);
		free(msg);
		if (rc < 0)
			return rc;
		if (to == serial && (r->type == TYPE_RETURN || r->type == TYPE_ERROR))
			return 0;
	}
	return -EPROTO;
}
