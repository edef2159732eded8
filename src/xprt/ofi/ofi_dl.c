// SPDX-License-Identifier: MIT
/*
 * ofi_dl.c - libfabric, loaded when the ofi backend is first used.
 *
 * The library does not link libfabric: loading it (and the provider
 * libraries it links, such as PSM's, whose constructors probe for their
 * hardware, pin the thread and sleep ~200 ms here) would cost every
 * process that links libibtrs, ofi or not. The five entry points of
 * libfabric the backend calls (everything else is an inline call through
 * the objects these return) are defined here, hidden, and forward to
 * libfabric.so.1 opened on first use, at the symbol versions the headers
 * were written for. Without libfabric at run time they fail with
 * -FI_ENOSYS and the backend says which library is missing.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "log.h"

#define OFI_DL_NAME "libfabric.so.1"

struct ofi_dl {
	int (*getinfo)(uint32_t, const char *, const char *, uint64_t,
		       const struct fi_info *, struct fi_info **);
	void (*freeinfo)(struct fi_info *);
	struct fi_info *(*dupinfo)(const struct fi_info *);
	int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
	const char *(*strerror)(int);
	char err[256];
};

static struct ofi_dl dl;
static pthread_once_t dl_once = PTHREAD_ONCE_INIT;

/* The symbol at @ver, else its default version (an older libfabric). */
static void *sym(void *h, const char *name, const char *ver)
{
	void *p = dlvsym(h, name, ver);

	return p ? p : dlsym(h, name);
}

static void dl_open(void)
{
	const char *e;
	void *h;

	h = dlopen(OFI_DL_NAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		e = dlerror();
		snprintf(dl.err, sizeof(dl.err), "%s", e ? e : OFI_DL_NAME);
		return;
	}
	dl.getinfo = sym(h, "fi_getinfo", "FABRIC_1.3");
	dl.freeinfo = sym(h, "fi_freeinfo", "FABRIC_1.3");
	dl.dupinfo = sym(h, "fi_dupinfo", "FABRIC_1.3");
	dl.fabric = sym(h, "fi_fabric", "FABRIC_1.1");
	dl.strerror = sym(h, "fi_strerror", "FABRIC_1.0");
	if (!dl.getinfo || !dl.freeinfo || !dl.dupinfo || !dl.fabric ||
	    !dl.strerror) {
		snprintf(dl.err, sizeof(dl.err),
			 "%s lacks an entry point the ofi backend needs",
			 OFI_DL_NAME);
		dl.getinfo = NULL;
		/* The handle stays open: nothing else may use it now. */
	}
}

/* True if libfabric is there; logs why not, once. */
static bool dl_ready(void)
{
	static bool said;

	pthread_once(&dl_once, dl_open);
	if (dl.getinfo)
		return true;
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		ibtrs_log(IBTRS_LOG_ERR,
			  "ofi: cannot load libfabric (%s): install libfabric1",
			  dl.err);
	return false;
}

__attribute__((visibility("hidden"))) int
fi_getinfo(uint32_t version, const char *node, const char *service,
	   uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
	if (!dl_ready())
		return -FI_ENOSYS;
	return dl.getinfo(version, node, service, flags, hints, info);
}

__attribute__((visibility("hidden"))) void fi_freeinfo(struct fi_info *info)
{
	if (info && dl_ready())
		dl.freeinfo(info);
}

__attribute__((visibility("hidden"))) struct fi_info *
fi_dupinfo(const struct fi_info *info)
{
	return dl_ready() ? dl.dupinfo(info) : NULL;
}

__attribute__((visibility("hidden"))) int fi_fabric(struct fi_fabric_attr *attr,
						    struct fid_fabric **fabric,
						    void *context)
{
	if (!dl_ready())
		return -FI_ENOSYS;
	return dl.fabric(attr, fabric, context);
}

__attribute__((visibility("hidden"))) const char *fi_strerror(int errnum)
{
	if (dl_ready())
		return dl.strerror(errnum);
	return errnum == FI_ENOSYS ? "libfabric not loaded" : "libfabric error";
}
