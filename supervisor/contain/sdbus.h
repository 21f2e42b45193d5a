/* sdbus.h: just enough of the D-Bus wire protocol to ask a systemd
 * manager one thing over its private socket (/run/systemd/private, or a
 * user manager's $XDG_RUNTIME_DIR/systemd/private) -- the socket systemctl
 * and systemd-run use when no bus broker runs, and the only one a user
 * manager always has.
 *
 * A private connection is peer to peer: no broker, no Hello, no names.
 * The client authenticates with EXTERNAL (the kernel tells the manager our
 * uid through SO_PEERCRED), sends one method call and reads messages until
 * the reply to it.  Messages are little-endian, marshalled by the rules of
 * the D-Bus specification (each value aligned to its size, structs and
 * dict entries to 8, an array's byte length before its elements and the
 * padding to its first element counted outside it).
 *
 * memsup links libc alone, so this is written here rather than taken from
 * libsystemd or libdbus; it writes only the types a transient unit's
 * properties need (y b u s o g v a( )), and reads from a reply only its
 * header fields and a leading string (an error's message).
 *
 * Return convention: 0 or -errno; EPROTO for a peer that does not speak
 * the protocol as written here.  Every wait is bounded by the timeout given
 * at connect (a manager that hangs must not hang memsup). */
#ifndef MEMSUP_SDBUS_H
#define MEMSUP_SDBUS_H

#include <stddef.h>
#include <stdint.h>

/* A message being written: a fixed buffer, since what memsup sends is a
 * few hundred bytes.  A write past cap sets `overflow`, and sending such a
 * message fails with -EMSGSIZE. */
#define SDBUS_MSG_CAP 4096u
#define SDBUS_MAX_DEPTH 8u

struct sdbus_msg {
	uint8_t buf[SDBUS_MSG_CAP];
	size_t len;
	size_t body;               /* where the body starts (after the header) */
	size_t open[SDBUS_MAX_DEPTH]; /* arrays open: where each length word is */
	size_t open_start[SDBUS_MAX_DEPTH]; /* and where each's elements start */
	size_t depth;
	int overflow;
};

/* A method call to `dest`'s `path`, `iface`.`member`, whose body will have
 * the D-Bus signature `sig` ("" for none).  The body follows from the
 * sdbus_put_* calls, in signature order. */
void sdbus_call(struct sdbus_msg *m, const char *dest, const char *path, const char *iface,
		const char *member, const char *sig);
void sdbus_put_u32(struct sdbus_msg *m, uint32_t v);
void sdbus_put_bool(struct sdbus_msg *m, int v);
void sdbus_put_str(struct sdbus_msg *m, const char *s);           /* 's' and 'o' */
void sdbus_put_sig(struct sdbus_msg *m, const char *s);           /* 'g' */
/* An array of elements aligned to `align` (8 for structs, 4 for u32);
 * close it with sdbus_array_end(). */
void sdbus_array_begin(struct sdbus_msg *m, size_t align);
void sdbus_array_end(struct sdbus_msg *m);
/* A struct's start (structs align to 8; their members follow). */
void sdbus_struct(struct sdbus_msg *m);
/* A variant's signature; its one value follows. */
void sdbus_variant(struct sdbus_msg *m, const char *sig);
/* The body length and the serial written into the header: the message as
 * it goes on the wire.  -EMSGSIZE after an overflow, -EINVAL with an array
 * left open. */
int sdbus_finish(struct sdbus_msg *m, uint32_t serial);

/* What a reply said. */
#define SDBUS_ERR_BYTES 256u
struct sdbus_reply {
	int type;                  /* 2 method return, 3 error */
	char error_name[SDBUS_ERR_BYTES]; /* an error's name; "" for a return */
	char text[SDBUS_ERR_BYTES]; /* the body's first string, when the body
				       starts with one: an error's message, a
				       job's object path */
};

/* Parse one whole message (header and body, as read from the wire) of
 * `len` bytes: its type, reply serial and, into r, what it said.  The
 * message's total length is sdbus_msg_len() of its first 16 bytes.
 * Pure; 0, or -EPROTO for anything malformed. */
int sdbus_parse(const uint8_t *msg, size_t len, uint32_t *reply_serial, struct sdbus_reply *r);
/* The total length of a message whose first 16 bytes are `head`; 0 when
 * they are no little-endian D-Bus 1 header, or it is over 1 MiB. */
size_t sdbus_msg_len(const uint8_t head[16]);

/* Connect to the unix socket `path` and authenticate as `uid`, every read
 * and write bounded by timeout_ms.  The fd, or -errno. */
int sdbus_connect(const char *path, unsigned uid, int timeout_ms);
/* Send m (finished with `serial`) on fd and read until the reply to it:
 * 0 with r filled (an error reply is 0 too: r->type says), or -errno. */
int sdbus_roundtrip(int fd, struct sdbus_msg *m, uint32_t serial, struct sdbus_reply *r);

#endif /* MEMSUP_SDBUS_H */
