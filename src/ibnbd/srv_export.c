// SPDX-License-Identifier: MIT
/*
 * srv_export.c - the export table of the ibnbd server: files and block
 * devices by name, opened once at export time, and their geometry.
 *
 * A client names an export, never a path: a name is looked up in the
 * table only, and names that could climb out of a directory ('/', ".",
 * "..") never get in (ibnbd_name_valid()). An export directory is scanned
 * once: its regular files and block devices become exports by their file
 * names, like RNBD's dev_search_path without the path building.
 *
 * The allow list says which client identities may open which exports:
 * pairs of fnmatch(3) patterns, checked at every OPEN against the identity
 * ibtrs vouches for (the key a client proved, else its address). An empty
 * list allows everything, so that a server without rules serves as it
 * always did.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "srv.h"

/*
 * Block sizes a file export reports. O_DIRECT needs the alignment of the
 * file system's device, which is 4096 at most on the devices that matter:
 * a file opened O_DIRECT reports 4096-byte logical blocks.
 */
#define SRV_FILE_LBS 512u
#define SRV_FILE_PBS 4096u

/**
 * file_membacked() - whether a regular file lives in memory only
 * @fd: the file
 *
 * tmpfs and ramfs have no device behind them: reading and writing is a
 * copy between the page cache and the caller, which io_uring (without
 * RWF_NOWAIT support in these file systems) would hand to a worker
 * thread per request. It can only wait for memory, as the memory target
 * does.
 *
 * Return: true for a file of tmpfs or ramfs.
 */
static bool file_membacked(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs))
		return false;
	return sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC;
}

/**
 * srv_export_find() - look an export up by name
 * @srv: the server
 * @name: the name, NUL-terminated
 *
 * Context: srv->lock held.
 *
 * Return: the export or NULL.
 */
struct srv_export *srv_export_find(struct ibnbd_srv *srv, const char *name)
{
	struct srv_export *e;

	for (e = srv->exports; e; e = e->next)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

/**
 * blkdev_discard() - whether a block device discards
 * @fd: the device
 *
 * Reads queue/discard_max_bytes of the device in sysfs.
 *
 * Return: true when it is above 0.
 */
static bool blkdev_discard(int fd)
{
	char path[96], buf[32];
	struct stat st;
	ssize_t n;
	int sfd;

	if (fstat(fd, &st))
		return false;
	snprintf(path, sizeof(path),
		 "/sys/dev/block/%u:%u/queue/discard_max_bytes",
		 major(st.st_rdev), minor(st.st_rdev));
	sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0) {
		/* A partition has its queue one level up. */
		snprintf(path, sizeof(path),
			 "/sys/dev/block/%u:%u/../queue/discard_max_bytes",
			 major(st.st_rdev), minor(st.st_rdev));
		sfd = open(path, O_RDONLY | O_CLOEXEC);
		if (sfd < 0)
			return false;
	}
	n = read(sfd, buf, sizeof(buf) - 1);
	close(sfd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10) > 0;
}

/**
 * srv_export_geo() - the geometry of an export now
 * @exp: the export
 * @geo: filled
 *
 * Files: 512-byte (4096 with O_DIRECT) logical and 4096-byte physical
 * blocks, the size rounded down to the logical block. Block devices:
 * BLKSSZGET, BLKPBSZGET and BLKGETSIZE64. Probed at every OPEN, so a grown file
 * shows its new size.
 *
 * Return: 0, or a negative errno.
 */
int srv_export_geo(const struct srv_export *exp, struct srv_geo *geo)
{
	struct stat st;
	uint64_t size;
	int lbs, pbs;

	if (!exp->blkdev) {
		if (fstat(exp->file.fd, &st))
			return -errno;
		geo->lbs = exp->file.direct ? SRV_FILE_PBS : SRV_FILE_LBS;
		geo->pbs = SRV_FILE_PBS;
		size = (uint64_t)st.st_size;
	} else {
		if (ioctl(exp->file.fd, BLKGETSIZE64, &size) ||
		    ioctl(exp->file.fd, BLKSSZGET, &lbs) ||
		    ioctl(exp->file.fd, BLKPBSZGET, &pbs))
			return -errno;
		if (lbs < 512 || lbs > 65536 || (lbs & (lbs - 1)))
			return -EINVAL;
		if (pbs < lbs || (pbs & (pbs - 1)))
			pbs = lbs;
		geo->lbs = (uint32_t)lbs;
		geo->pbs = (uint32_t)pbs;
	}
	geo->size = size - size % geo->lbs;
	return 0;
}

/**
 * ibnbd_srv_add_export() - export a file or block device by name
 * @srv: the server
 * @name: the name clients open
 * @path: a regular file or a block device
 * @readonly: refuse rw opens of this export
 *
 * Return: 0, -EINVAL, -EEXIST, -ENOMEM or the errno of opening @path.
 */
int ibnbd_srv_add_export(struct ibnbd_srv *srv, const char *name,
			 const char *path, bool readonly)
{
	struct srv_export *e;
	struct stat st;
	size_t n;
	int fd, flags, ret;

	if (!srv || !name || !path || !path[0])
		return -EINVAL;
	n = strnlen(name, IBNBD_NAME_MAX + 1);
	if (!ibnbd_name_valid(name, n) || strlen(path) >= PATH_MAX)
		return -EINVAL;
	/* A FIFO must not be opened: a read-only open would block. */
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return -EINVAL;
	flags = (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NONBLOCK;
	if (srv->opts.direct)
		flags |= O_DIRECT;
	fd = open(path, flags);
	if (fd < 0)
		return -errno;
	/*
	 * The path may have changed since stat(). O_NONBLOCK goes again: on
	 * a file io_uring would answer -EAGAIN where it can wait instead.
	 */
	if (fstat(fd, &st) ||
	    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK & ~O_ACCMODE)) {
		ret = -errno;
		goto err;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		ret = -EINVAL;
		goto err;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		ret = -ENOMEM;
		goto err;
	}
	memcpy(e->name, name, n);
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->file.fd = fd;
	e->readonly = readonly;
	e->blkdev = S_ISBLK(st.st_mode);
	e->file.direct = srv->opts.direct;
	/* A device node's fstatfs() is its directory's (devtmpfs). */
	e->file.membacked = !e->blkdev && file_membacked(fd);
	/* O_DIRECT with RWF_NOWAIT would still wait for the device. */
	e->file.nowait[0] = e->file.nowait[1] = !e->file.direct;
	e->discard = e->blkdev ? blkdev_discard(fd) : true;

	pthread_mutex_lock(&srv->lock);
	if (srv_export_find(srv, e->name)) {
		pthread_mutex_unlock(&srv->lock);
		free(e);
		ret = -EEXIST;
		goto err;
	}
	e->next = srv->exports;
	srv->exports = e;
	srv->nr_exports++;
	pthread_mutex_unlock(&srv->lock);
	return 0;
err:
	close(fd);
	return ret;
}

/**
 * ibnbd_srv_add_export_dir() - export every file of a directory
 * @srv: the server
 * @dir: the directory
 * @readonly: export them read only
 *
 * Entries that are neither regular files nor block devices (after
 * following symbolic links), and names that are not valid export names,
 * are skipped. A file that cannot be exported fails the call; the exports
 * added before stay.
 *
 * Return: the number of exports added, or a negative errno (-ENOTDIR when
 * @dir is not a directory).
 */
int ibnbd_srv_add_export_dir(struct ibnbd_srv *srv, const char *dir,
			     bool readonly)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int count = 0, ret = 0;
	DIR *d;

	if (!srv || !dir || !dir[0])
		return -EINVAL;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (!ibnbd_name_valid(de->d_name, n))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path)) {
			ret = -ENAMETOOLONG;
			break;
		}
		if (stat(path, &st) ||
		    (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)))
			continue;
		ret = ibnbd_srv_add_export(srv, de->d_name, path, readonly);
		if (ret)
			break;
		count++;
	}
	if (!ret && errno)
		ret = -errno;
	closedir(d);
	return ret ? ret : count;
}

/**
 * srv_exports_free() - close every export and empty the table
 * @srv: the server, no session left
 */
void srv_exports_free(struct ibnbd_srv *srv)
{
	struct srv_export *e, *next;

	for (e = srv->exports; e; e = next) {
		next = e->next;
		close(e->file.fd);
		free(e);
	}
	srv->exports = NULL;
	srv->nr_exports = 0;
}

/**
 * ibnbd_srv_allow() - let the identities of a pattern open some exports
 * @srv: the server
 * @identity: fnmatch(3) pattern of client identities
 * @export: fnmatch(3) pattern of export names
 *
 * Return: 0, -EINVAL (NULL or empty patterns, or longer than an identity
 * or an export name can be), -ENOMEM.
 */
int ibnbd_srv_allow(struct ibnbd_srv *srv, const char *identity,
		    const char *export)
{
	struct srv_allow *a, **pp;

	if (!srv || !identity || !export || !identity[0] || !export[0] ||
	    strlen(identity) > SRV_IDENTITY_MAX ||
	    strlen(export) > IBNBD_NAME_MAX)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	strcpy(a->identity, identity);
	strcpy(a->export, export);
	pthread_mutex_lock(&srv->lock);
	/* In the order added, for messages that list them. */
	for (pp = &srv->allow; *pp; pp = &(*pp)->next)
		;
	*pp = a;
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

/**
 * srv_allowed() - whether the allow list lets @identity open @name
 * @srv: the server
 * @identity: the session's identity ("" when unknown)
 * @name: the export name
 *
 * Context: srv->lock held.
 *
 * Return: true without rules, or when a rule matches both.
 */
bool srv_allowed(const struct ibnbd_srv *srv, const char *identity,
		 const char *name)
{
	const struct srv_allow *a;

	if (!srv->allow)
		return true;
	for (a = srv->allow; a; a = a->next)
		if (!fnmatch(a->identity, identity, 0) &&
		    !fnmatch(a->export, name, 0))
			return true;
	return false;
}

/**
 * srv_allow_free() - empty the allow list
 * @srv: the server
 */
void srv_allow_free(struct ibnbd_srv *srv)
{
	struct srv_allow *a, *next;

	for (a = srv->allow; a; a = next) {
		next = a->next;
		free(a);
	}
	srv->allow = NULL;
}
