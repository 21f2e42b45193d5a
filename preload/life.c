/* life.c: the shim's own start and end: constructor, exit status capture,
 * destructor, fork handlers.
 *
 * Fatal signals: the shim installs no handlers.  A handler would change
 * what the program observes (sigaction() would no longer report SIG_DFL,
 * and e.g. Python decides whether to install its SIGINT handler from that)
 * and would have to re-raise to keep core dumps and the wait status.  What
 * is lost: a process killed by a signal keeps state MT_STATE_RUNNING with
 * its last counters, but no end time, VmHWM or rusage figures; memsup gets
 * the signal from the wait status and the kernel figures from its polling.
 */
#include <pthread.h>
#include <stdlib.h>

#include "api.h"
#include "base/boot.h"
#include "base/config.h"
#include "base/errfd.h"
#include "base/route.h"
#include "core/counters.h"
#include "track.h"
#include "image.h"
#include "record/store.h"
#include "life.h"
#include "record.h"
#include "sampling/sample.h"
#include "sampling/sites.h"
#include "base/shim.h"

static int life_exit_hooked;

/* Runs after everything else at exit: ld.so registered its _dl_fini (which
 * runs every destructor, the program's and ours) after our constructor
 * registered this, so handlers run in reverse order and this one comes
 * last, with main's return value or exit()'s argument. */
static void life_on_exit(int status, void *arg)
{
	(void)arg;
	image_end(MT_STATE_EXITED, status);
}

int life_quick_status;

/* at_quick_exit handlers run in reverse order too: ours, registered from
 * the constructor, runs after the program's.  hooks.c kept the status. */
static void life_on_quick_exit(void)
{
	image_end(MT_STATE_EXITED, life_quick_status);
}

static int life_fork_locked;

/* Hold the shim's locks across fork() so the child inherits a whole map
 * table and whole markers.  Not when fork() comes from a signal handler
 * that interrupted this very thread inside the shim: it may hold them, and
 * waiting would never end.
 *
 * Where glibc runs this among other libraries' handlers is not ours to
 * choose (in reverse order of registration, and an allocator such as
 * jemalloc registers its own at its first malloc, before or after our
 * constructor), so the locks held here must not be ones a thread inside
 * another allocator waits for: that thread may hold the allocator's lock
 * its prepare handler, run after ours, waits for.  The map table's hooks
 * queue their updates instead of waiting while a fork holds it (maps.h);
 * the sampler's give way to a fork too (sites.c); the markers' lock is
 * taken only by the memtrace_mark API, never from inside an allocator. */
static void life_prepare(void)
{
	life_fork_locked = shim_guard_enter();
	if (!life_fork_locked)
		return;
	api_fork_prepare();
	track_fork_prepare();
	store_fork_prepare(); /* the map figures are stable under the lock */
	sites_fork_prepare(); /* the sampled-site tables whole in the child */
}

static void life_parent(void)
{
	if (!life_fork_locked)
		return;
	sites_fork_parent();
	store_fork_parent();
	track_fork_parent(); /* the updates queued meanwhile applied */
	api_fork_release();
	shim_guard_leave();
}

/* Async-signal-safe: raw system calls only (store.c). */
static void life_child(void)
{
	errfd_in_child();
	api_fork_release();
	store_fork_child(); /* the counts one thread's again (counters_go_single) */
	/* then the sampling count and the paths follow (as hooks.c switches
	 * them on the way to threads, in the other order) */
	sample_go_single();
	route_threads(0);
	/* after the child's record: the queue counts there */
	track_fork_child(life_fork_locked);
	sites_fork_child(store_has_file()); /* after the child's record: it names the table */
	if (life_fork_locked)
		shim_guard_leave();
}

/* pthread_atfork and at_quick_exit are not in glibc's libc.so but in
 * libc_nonshared.a: one-line wrappers of __register_atfork and
 * __cxa_at_quick_exit (both exported by libc.so.6, GLIBC_2.3.2 and 2.10)
 * that pass this object's __dso_handle.  The link puts them after
 * everything else, libgcc's unwinder included, on a 64 KB window of the
 * shim's code (the kernel maps a read fault's neighbours with it) that
 * nothing else a start or an end runs touches: one page fault in every
 * image, for two calls.  So with glibc the constructor calls what they
 * call, exactly as they call it. */
#ifdef __GLIBC__
extern void *__dso_handle __attribute__((visibility("hidden")));
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso);
extern int __cxa_at_quick_exit(void (*fn)(void *), void *dso);

static void life_on_quick_exit_cxa(void *arg)
{
	(void)arg;
	life_on_quick_exit();
}

static void life_register_fork(void)
{
	__register_atfork(life_prepare, life_parent, life_child, __dso_handle);
}

static void life_register_quick_exit(void)
{
	__cxa_at_quick_exit(life_on_quick_exit_cxa, __dso_handle);
}
#else
static void life_register_fork(void)
{
	pthread_atfork(life_prepare, life_parent, life_child);
}

static void life_register_quick_exit(void)
{
	at_quick_exit(life_on_quick_exit);
}
#endif

/* glibc passes (argc, argv, envp) to ELF constructors. */
__attribute__((constructor)) static void life_start(int argc, char **argv, char **envp)
{
	(void)envp;
	boot_ensure();
	track_init();
	errfd_note_start();
	image_start(argc, argv);
	/* on_exit sees main's return value as well as exit()'s argument;
	 * registered between the two as before (exit handlers run in
	 * reverse order of registration). */
	life_register_fork();
	life_exit_hooked = on_exit(life_on_exit, NULL) == 0;
	life_register_quick_exit();
}

/* Only if on_exit could not be registered (exit status then unknown: 0). */
__attribute__((destructor)) static void life_end(void)
{
	if (!life_exit_hooked)
		image_end(MT_STATE_EXITED, 0);
}
