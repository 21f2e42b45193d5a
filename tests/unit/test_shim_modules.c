/* test_shim_modules.c: the module table of the stacks file (modules.h),
 * filled from this process's own maps: our executable, its build-id (the
 * same as the file's), lookups, a table with no room. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"
#include "sampling/modules.h"
#include "stacks.h"

static ssize_t test_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(*(int *)ctx, buf, n, (off_t)off);
	return r < 0 ? -errno : r;
}

static _Alignas(4096) unsigned char table[MT_STACKS_MODULES_OFFSET + 64 * MT_STACKS_MODULE_BYTES];

static int reserve_ok(uint32_t n)
{
	return n <= 64;
}

Test(modules, table_has_our_executable_with_build_id)
{
	struct mt_stacks_header *h = (struct mt_stacks_header *)table;
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	int rc, i;
	cr_assert_gt(len, 0);
	exe[len] = '\0';
	rc = modules_refresh(h, reserve_ok);
	cr_assert_gt(rc, 2, "modules added: %d", rc);
	i = modules_find((uintptr_t)reserve_ok);
	cr_assert_geq(i, 0);
	const struct mt_stacks_module *m = mt_stacks_module(h, (uint32_t)i);
	cr_expect_str_eq(m->path, exe);
	cr_expect(m->flags & MT_MODULE_SELF, "libmtcore is linked into this test");
	cr_expect_geq(m->build_id_len, 8, "gcc on Debian links a build-id");
	cr_expect_eq(modules_find(8), -1);
	/* A second refresh finds nothing new. */
	cr_expect_eq(modules_refresh(h, reserve_ok), 0);
	cr_expect_eq(h->module_refreshes, 2);
	/* The build-id agrees with the file's own. */
	int fd = open(exe, O_RDONLY);
	struct elfsym e;
	uint8_t id[32];
	cr_assert_eq(elfsym_open(&e, test_pread, &fd), 0);
	cr_assert_eq(elfsym_build_id(&e, 0, id, sizeof id), (int)m->build_id_len);
	cr_expect_eq(memcmp(id, m->build_id, m->build_id_len), 0);
	close(fd);
}

static int reserve_two(uint32_t n)
{
	return n <= 2;
}

Test(modules, no_room_stops_the_table)
{
	struct mt_stacks_header *h = (struct mt_stacks_header *)table;
	cr_expect_eq(modules_refresh(h, reserve_two), 2);
	cr_expect_eq(h->module_count, 2);
}

