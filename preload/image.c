/* image.c: one image's life (see image.h). */
#include <errno.h>

#include "base/boot.h"
#include "base/config.h"
#include "core/counters.h"
#include "image.h"
#include "record/lineage.h"
#include "record/store.h"
#include "report/report.h"
#include "report/summary.h"
#include "sampling/sites.h"

void image_start(int argc, char **argv)
{
	/* what boot learnt of the heap, before the record's identity keeps it */
	if (boot_heap_flags)
		counters_set_flag(boot_heap_flags);
	config_load();
	store_identify(argc, argv);
	summary_start(counters_rec->pid); /* may give config.dir a private directory */
	lineage_start(counters_rec);
	store_publish();
	sites_start(store_has_file()); /* sampling, once the record (and its file) exists */
}

void image_end(unsigned state, int exit_code)
{
	if (store_finish(state, exit_code, 0))
		report_end(counters_rec);
}

int image_exec_begin(unsigned *relation)
{
	if (!counters_is_own_process()) {
		*relation = MT_REL_VFORK;
		return 0;
	}
	*relation = MT_REL_EXEC;
	return store_finish(MT_STATE_EXECED, 0, 0);
}

void image_exec_end(int marked)
{
	int saved = errno;
	if (marked)
		store_unfinish();
	errno = saved;
}
