// SPDX-License-Identifier: MIT
/*
 * clt_fault.c - fault injection into client paths, for testing: the
 * faults planned from IBTRS_FAULT, their tick, ibtrs_clt_inject_fault()
 * (<ibtrs_fault.h>) and the one hook the I/O path asks, clt_fault_hit()
 * (clt_int.h). A path holds at most one fault, set here on the loop thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clt_int.h"

/* Loop thread: set the fault of @path, or fail it now for CLOSE. */
static void apply_fault(struct ibtrs_clt *sess, struct clt_path *path,
			enum ibtrs_fault_type type, unsigned int arg)
{
	static const char *const names[] = { "none", "drop", "delay", "close" };

	clt_event(sess, (int)path->idx, "fault injected: %s %u", names[type],
		  arg);
	if (type == IBTRS_FAULT_CLOSE) {
		atomic_store(&path->fault, IBTRS_FAULT_NONE);
		clt_path_fail(path, "fault injection: close");
		return;
	}
	atomic_store(&path->fault_arg, arg);
	atomic_store(&path->fault, (int)type);
}

/* Loop thread: apply the planned faults that are due. */
void clt_fault_tick(struct ibtrs_clt *sess, uint64_t now)
{
	unsigned int i, n = atomic_load(&sess->path_cnt);

	for (i = 0; i < sess->nr_faults; i++) {
		struct clt_fault *f = &sess->faults[i];

		if (f->done || now < f->due_ns || f->idx >= n ||
		    atomic_load(&sess->paths[f->idx]->state) !=
			    IBTRS_PATH_CONNECTED)
			continue;
		f->done = true;
		apply_fault(sess, sess->paths[f->idx], f->type, f->arg);
	}
}

/*
 * IBTRS_FAULT: IDX:TYPE[=ARG][@AFTER_MS] separated by commas, e.g.
 * "1:drop@3000,0:delay=20".
 */
int clt_parse_faults(struct ibtrs_clt *sess, const char *spec)
{
	static const char *const names[] = { "none", "drop", "delay", "close" };
	const char *p = spec;

	while (p && *p) {
		struct clt_fault f = { 0 };
		unsigned long idx, arg = 0, after = 0;
		char *end;
		unsigned int t;
		size_t len;

		if (sess->nr_faults == CLT_MAX_FAULTS)
			return -EINVAL;
		idx = strtoul(p, &end, 10);
		if (end == p || *end != ':' || idx >= IBTRS_MAX_PATHS)
			return -EINVAL;
		p = end + 1;
		len = strcspn(p, "=@,");
		for (t = 0; t < ARRAY_SIZE(names); t++)
			if (strlen(names[t]) == len &&
			    !strncmp(p, names[t], len))
				break;
		if (t == ARRAY_SIZE(names))
			return -EINVAL;
		p += len;
		if (*p == '=') {
			arg = strtoul(p + 1, &end, 10);
			if (end == p + 1 || arg > 600000)
				return -EINVAL;
			p = end;
		}
		if (*p == '@') {
			after = strtoul(p + 1, &end, 10);
			if (end == p + 1 || after > 86400000)
				return -EINVAL;
			p = end;
		}
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
		f.idx = (unsigned int)idx;
		f.type = (enum ibtrs_fault_type)t;
		f.arg = (unsigned int)arg;
		f.due_ns = ibtrs_now_ns() + (uint64_t)after * 1000000;
		sess->faults[sess->nr_faults++] = f;
	}
	return 0;
}

struct fault_call {
	struct clt_path *path;
	enum ibtrs_fault_type type;
	unsigned int arg;
};

static void fault_fn(void *arg)
{
	struct fault_call *fc = arg;

	apply_fault(fc->path->sess, fc->path, fc->type, fc->arg);
}

/* ibtrs_clt_inject_fault() (ibtrs_fault.h), bound to its name below. */
__attribute__((visibility("default"))) int
clt_inject_fault(struct ibtrs_clt *sess, unsigned int idx,
		 enum ibtrs_fault_type type, unsigned int arg);
int clt_inject_fault(struct ibtrs_clt *sess, unsigned int idx,
		     enum ibtrs_fault_type type, unsigned int arg)
{
	struct fault_call fc = { .type = type, .arg = arg };

	fc.path = sess ? clt_path_get(sess, idx) : NULL;
	if (!fc.path)
		return -ENOENT;
	if ((unsigned int)type > IBTRS_FAULT_CLOSE)
		return -EINVAL;
	ibtrs_loop_call(sess->loop, fault_fn, &fc);
	return 0;
}

/*
 * One call under two versions: IBTRS_FAULT_1, the default, and IBTRS_0.1
 * for binaries linked when the fault API was part of the stable one.
 */
__asm__(".symver clt_inject_fault,ibtrs_clt_inject_fault@@IBTRS_FAULT_1");
__asm__(".symver clt_inject_fault_0_1,ibtrs_clt_inject_fault@IBTRS_0.1");
__attribute__((visibility("default"), alias("clt_inject_fault"))) int
clt_inject_fault_0_1(struct ibtrs_clt *sess, unsigned int idx,
		     enum ibtrs_fault_type type, unsigned int arg);
