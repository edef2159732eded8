// SPDX-License-Identifier: MIT
/*
 * func_io.c - the ibnbd client against an in-process server on temp files.
 *
 * - data written through ibnbd_submit() is in the file (pread), data
 *   written to the file (pwrite) is what ibnbd READ returns; sizes from
 *   512 bytes to max_io_size, one and several iovecs;
 * - FLUSH, WRITE with FUA and PREFLUSH succeed;
 * - DISCARD punches a hole (SEEK_HOLE finds it) that reads as zeros;
 *   WRITE_ZEROES zeros, deallocating without NOUNMAP (st_blocks drops) and
 *   keeping the blocks with it (st_blocks stays);
 * - a read-only export refuses a rw open (-EROFS, the server), a ro open
 *   refuses writes (-EROFS, locally); a second rw open is -EBUSY, a
 *   migration open is granted; unknown names are -ENOENT, bad names and
 *   modes -EINVAL without a round trip;
 * - local validation errors (-EINVAL, -EMSGSIZE, -EOPNOTSUPP) never call
 *   the callback and never reach the server (its request count stays);
 * - a backing file on a full tmpfs fails that WRITE with -ENOSPC and the
 *   session goes on (root only, else skipped with a message);
 * - ibnbd_clt_detach() is -EBUSY while a device is open.
 */
#include <sys/mount.h>

#include "func_harness.h"

#define DISK_SIZE (4u << 20)

static struct f_srv srv;
static char disk_path[128];
static char mnt_dir[64];

/* A failed CHECK exits: the tmpfs of the -ENOSPC case goes all the same. */
static void mnt_cleanup(void)
{
	if (!mnt_dir[0])
		return;
	umount2(mnt_dir, MNT_DETACH);
	rmdir(mnt_dir);
}

static uint64_t srv_requests(void)
{
	struct ibtrs_srv_stats st = { .size = sizeof(st) };

	CHECK_EQ(ibtrs_srv_get_stats(srv.ctx, &st), 0);
	return st.requests;
}

/* WRITE @len bytes at @off split into @nseg iovecs, then check the file. */
static void write_check(struct ibnbd_dev *dev, uint64_t off, uint32_t len,
			unsigned int nseg, unsigned long long seed)
{
	unsigned char *buf = malloc(len), *back = malloc(len);
	struct iovec iov[8];
	uint32_t done = 0;
	unsigned int i;

	CHECK(buf && back && nseg >= 1 && nseg <= 8);
	t_fill(buf, len, seed);
	for (i = 0; i < nseg; i++) {
		/* Uneven pieces: the last one takes the rest. */
		uint32_t piece = i + 1 < nseg ? (len / nseg) & ~7u : len - done;

		iov[i].iov_base = buf + done;
		iov[i].iov_len = piece;
		done += piece;
	}
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_WRITE, 0, off, len, iov, nseg),
		 0);
	f_pread(disk_path, back, len, (off_t)off);
	CHECK(!memcmp(buf, back, len));
	free(buf);
	free(back);
}

/* pwrite @len bytes at @off to the file, READ them in @nseg iovecs. */
static void read_check(struct ibnbd_dev *dev, uint64_t off, uint32_t len,
		       unsigned int nseg, unsigned long long seed)
{
	unsigned char *buf = malloc(len), *back = malloc(len);
	struct iovec iov[8];
	uint32_t done = 0;
	unsigned int i;

	CHECK(buf && back && nseg >= 1 && nseg <= 8);
	t_fill(buf, len, seed);
	f_pwrite(disk_path, buf, len, (off_t)off);
	memset(back, 0x5a, len);
	for (i = 0; i < nseg; i++) {
		uint32_t piece = i + 1 < nseg ? len / nseg : len - done;

		iov[i].iov_base = back + done;
		iov[i].iov_len = piece;
		done += piece;
	}
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_READ, 0, off, len, iov, nseg),
		 0);
	CHECK(!memcmp(buf, back, len));
	free(buf);
	free(back);
}

static bool all_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

static void read_zeros(struct ibnbd_dev *dev, uint64_t off, uint32_t len)
{
	unsigned char *buf = malloc(len);
	struct iovec iov = { buf, len };

	CHECK(buf);
	memset(buf, 0x77, len);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_READ, 0, off, len, &iov, 1),
		 0);
	CHECK(all_zero(buf, len));
	free(buf);
}

static long long file_blocks(void)
{
	struct stat st;

	CHECK(stat(disk_path, &st) == 0);
	return (long long)st.st_blocks;
}

static void test_data(struct ibnbd_dev *dev, const struct ibnbd_geometry *g)
{
	static const uint32_t sizes[] = { 512, 1024, 4096, 8192, 65536 - 512 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		write_check(dev, (uint64_t)i * 131072 + 512, sizes[i],
			    1 + i % 3, 100 + i);
		read_check(dev, (uint64_t)i * 131072 + 1024, sizes[i],
			   1 + (i + 1) % 3, 200 + i);
	}
	/* The largest request, in one and in eight buffers. */
	write_check(dev, 2u << 20, g->max_io_size, 1, 300);
	write_check(dev, 2u << 20, g->max_io_size, 8, 301);
	read_check(dev, DISK_SIZE - g->max_io_size, g->max_io_size, 1, 302);
	read_check(dev, DISK_SIZE - g->max_io_size, g->max_io_size, 8, 303);
}

static void test_flush(struct ibnbd_dev *dev)
{
	unsigned char buf[4096];
	struct iovec iov = { buf, sizeof(buf) };

	t_fill(buf, sizeof(buf), 7);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_FLUSH, 0, 0, 0, NULL, 0), 0);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_WRITE, IBNBD_F_FUA, 8192,
				   sizeof(buf), &iov, 1),
		 0);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_WRITE,
				   IBNBD_F_FUA | IBNBD_F_PREFLUSH, 12288,
				   sizeof(buf), &iov, 1),
		 0);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_FLUSH, IBNBD_F_PREFLUSH, 0, 0,
				   NULL, 0),
		 0);
}

static void test_discard(struct ibnbd_dev *dev, const struct ibnbd_geometry *g)
{
	const uint64_t off = 1u << 20;
	const uint32_t len = 65536;
	long long before, after;
	off_t hole;
	int fd;

	CHECK(g->flags & IBNBD_DEV_DISCARD);
	CHECK(g->flags & IBNBD_DEV_WRITE_ZEROES);
	CHECK(g->max_discard >= len && g->max_write_zeroes >= len);

	/* DISCARD: a hole at the range, reading as zeros. */
	write_check(dev, off, len, 1, 400);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_DISCARD, 0, off, len, NULL, 0),
		 0);
	fd = open(disk_path, O_RDONLY);
	CHECK(fd >= 0);
	hole = lseek(fd, (off_t)off, SEEK_HOLE);
	close(fd);
	CHECK_EQ(hole, (long long)off);
	read_zeros(dev, off, len);

	/* WRITE_ZEROES without NOUNMAP deallocates. */
	write_check(dev, off, len, 1, 401);
	before = file_blocks();
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_WRITE_ZEROES, 0, off, len,
				   NULL, 0),
		 0);
	after = file_blocks();
	read_zeros(dev, off, len);
	CHECK(after < before);

	/* With NOUNMAP the blocks stay allocated. */
	write_check(dev, off, len, 1, 402);
	before = file_blocks();
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_WRITE_ZEROES, IBNBD_F_NOUNMAP,
				   off, len, NULL, 0),
		 0);
	after = file_blocks();
	read_zeros(dev, off, len);
	CHECK(after >= before);
}

static void test_local_errors(struct ibnbd_dev *dev,
			      const struct ibnbd_geometry *g)
{
	unsigned char *buf = malloc(g->max_io_size + 4096);
	struct iovec iov = { buf, 4096 }, big = { buf, g->max_io_size + 512 };
	struct iovec many[IBTRS_DEFAULT_MAX_SEGMENTS * 2 + 1];
	struct f_wait w;
	uint64_t reqs;
	unsigned int i, n = g->max_segments + 1;

	CHECK(buf && n <= sizeof(many) / sizeof(many[0]));
	f_wait_init(&w);
	for (i = 0; i < n; i++) {
		many[i].iov_base = buf + 512 * i % 4096;
		many[i].iov_len = 512;
	}
	reqs = srv_requests();
	/* Alignment and range. */
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_READ, 0, 100, 4096, &iov, 1, f_done,
			      &w),
		 -EINVAL);
	iov.iov_len = 1000;
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, 0, 0, 1000, &iov, 1, f_done,
			      &w),
		 -EINVAL);
	iov.iov_len = 4096;
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_READ, 0, g->size - 512, 4096, &iov,
			      1, f_done, &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_READ, 0, UINT64_MAX - 511, 4096,
			      &iov, 1, f_done, &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_READ, 0, 0, 0, &iov, 0, f_done, &w),
		 -EINVAL);
	/* @len and the iovecs disagree. */
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, 0, 0, 8192, &iov, 1, f_done,
			      &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, 0, 0, 4096, NULL, 0, f_done,
			      &w),
		 -EINVAL);
	/* Over the limits. */
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, 0, 0, g->max_io_size + 512,
			      &big, 1, f_done, &w),
		 -EMSGSIZE);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, 0, 0, 512 * n, many, n,
			      f_done, &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_DISCARD, 0, 0,
			      (uint32_t)(g->max_discard + 512), NULL, 0, f_done,
			      &w),
		 g->max_discard + 512ull > g->size ? -EINVAL : -EMSGSIZE);
	/* Bad op, flags, FLUSH with a range, no callback. */
	CHECK_EQ(ibnbd_submit(dev, (enum ibnbd_op)9, 0, 0, 4096, &iov, 1,
			      f_done, &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, 0x80, 0, 4096, &iov, 1,
			      f_done, &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_WRITE, IBNBD_F_NOUNMAP, 0, 4096,
			      &iov, 1, f_done, &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_FLUSH, 0, 0, 4096, NULL, 0, f_done,
			      &w),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit(dev, IBNBD_OP_READ, 0, 0, 4096, &iov, 1, NULL,
			      NULL),
		 -EINVAL);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_READ, 0, 4, 4096, &iov, 1),
		 -EINVAL);
	/* Nothing went out, no callback ran. */
	CHECK_EQ(srv_requests(), reqs);
	CHECK_EQ(w.calls, 0);
	free(buf);
}

static void test_modes(struct ibnbd_clt *clt, struct ibnbd_dev *rw)
{
	unsigned char buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct ibnbd_geometry g;
	struct ibnbd_dev *d, *m, *ro;
	struct f_wait w;
	uint64_t reqs;
	char name[300];

	f_wait_init(&w);
	/* A second rw open of a device open rw: -EBUSY; migration: yes. */
	errno = 0;
	CHECK(!ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RW, NULL));
	CHECK_EQ(errno, EBUSY);
	m = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_MIGRATION, &g);
	CHECK(m);
	CHECK(!(g.flags & IBNBD_DEV_READONLY));
	ro = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RO, &g);
	CHECK(ro);
	CHECK(g.flags & IBNBD_DEV_READONLY);
	/* Reads work on it, writes fail locally. */
	CHECK_EQ(ibnbd_submit_sync(ro, IBNBD_OP_READ, 0, 0, 4096, &iov, 1), 0);
	reqs = srv_requests();
	CHECK_EQ(ibnbd_submit(ro, IBNBD_OP_WRITE, 0, 0, 4096, &iov, 1, f_done,
			      &w),
		 -EROFS);
	CHECK_EQ(ibnbd_submit(ro, IBNBD_OP_WRITE_ZEROES, 0, 0, 4096, NULL, 0,
			      f_done, &w),
		 -EROFS);
	CHECK_EQ(ibnbd_submit(ro, IBNBD_OP_DISCARD, 0, 0, 4096, NULL, 0, f_done,
			      &w),
		 -EROFS);
	CHECK_EQ(srv_requests(), reqs);
	CHECK_EQ(w.calls, 0);
	CHECK_EQ(ibnbd_dev_close(ro), 0);
	CHECK_EQ(ibnbd_dev_close(m), 0);
	(void)rw;

	/* A read-only export: rw refused by the server, ro granted. */
	errno = 0;
	CHECK(!ibnbd_dev_open(clt, "rodisk", IBNBD_ACCESS_RW, NULL));
	CHECK_EQ(errno, EROFS);
	ro = ibnbd_dev_open(clt, "rodisk", IBNBD_ACCESS_RO, &g);
	CHECK(ro);
	CHECK(g.flags & IBNBD_DEV_READONLY);
	CHECK_EQ(ibnbd_submit(ro, IBNBD_OP_WRITE, 0, 0, 4096, &iov, 1, f_done,
			      &w),
		 -EROFS);
	CHECK_EQ(ibnbd_dev_close(ro), 0);

	/* Names outside the table: -ENOENT from the server. */
	errno = 0;
	CHECK(!ibnbd_dev_open(clt, "nosuch", IBNBD_ACCESS_RO, NULL));
	CHECK_EQ(errno, ENOENT);
	/* Bad names and modes: -EINVAL locally. */
	reqs = srv_requests();
	errno = 0;
	CHECK(!ibnbd_dev_open(clt, "../disk", IBNBD_ACCESS_RO, NULL));
	CHECK_EQ(errno, EINVAL);
	CHECK(!ibnbd_dev_open(clt, "", IBNBD_ACCESS_RO, NULL));
	CHECK_EQ(errno, EINVAL);
	CHECK(!ibnbd_dev_open(clt, "..", IBNBD_ACCESS_RO, NULL));
	CHECK_EQ(errno, EINVAL);
	CHECK(!ibnbd_dev_open(clt, "a b", IBNBD_ACCESS_RO, NULL));
	CHECK_EQ(errno, EINVAL);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CHECK(!ibnbd_dev_open(clt, name, IBNBD_ACCESS_RO, NULL));
	CHECK_EQ(errno, EINVAL);
	CHECK(!ibnbd_dev_open(clt, "disk", (enum ibnbd_access_mode)5, NULL));
	CHECK_EQ(errno, EINVAL);
	CHECK(!ibnbd_dev_open(clt, NULL, IBNBD_ACCESS_RO, NULL));
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(srv_requests(), reqs);

	/* The device closes and opens rw again. */
	d = ibnbd_dev_open(clt, "disk2", IBNBD_ACCESS_RW, NULL);
	CHECK(d);
	CHECK_EQ(ibnbd_dev_close(d), 0);
	d = ibnbd_dev_open(clt, "disk2", IBNBD_ACCESS_RW, NULL);
	CHECK(d);
	CHECK_EQ(ibnbd_dev_close(d), 0);
}

/*
 * A file on a 256 KiB tmpfs, exported with a size of 1 MiB: writes fill
 * the tmpfs until one fails with -ENOSPC; reads and the session go on.
 */
static void test_enospc(struct ibnbd_clt *clt)
{
	char path[192];
	unsigned char *buf = malloc(65536);
	struct iovec iov = { buf, 65536 };
	struct ibnbd_dev *dev;
	unsigned int i;
	int fd, ret = 0;

	CHECK(buf);
	if (geteuid() != 0) {
		fprintf(stderr, "skip: the -ENOSPC case needs root (tmpfs)\n");
		free(buf);
		return;
	}
	snprintf(mnt_dir, sizeof(mnt_dir), "/tmp/ibnbd-enospc-XXXXXX");
	CHECK(mkdtemp(mnt_dir));
	if (mount("tmpfs", mnt_dir, "tmpfs", 0, "size=256k")) {
		fprintf(stderr,
			"skip: the -ENOSPC case: cannot mount tmpfs: %s\n",
			strerror(errno));
		rmdir(mnt_dir);
		mnt_dir[0] = '\0';
		free(buf);
		return;
	}
	atexit(mnt_cleanup);
	snprintf(path, sizeof(path), "%s/full", mnt_dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 1 << 20) == 0);
	close(fd);
	CHECK_EQ(ibnbd_srv_add_export(srv.nbd, "full", path, false), 0);
	dev = ibnbd_dev_open(clt, "full", IBNBD_ACCESS_RW, NULL);
	CHECK(dev);
	t_fill(buf, 65536, 9);
	for (i = 0; i < 16 && !ret; i++)
		ret = ibnbd_submit_sync(dev, IBNBD_OP_WRITE, 0,
					(uint64_t)i * 65536, 65536, &iov, 1);
	CHECK_EQ(ret, -ENOSPC);
	/* The session goes on: a READ of the first block has the data. */
	memset(buf, 0, 65536);
	CHECK_EQ(ibnbd_submit_sync(dev, IBNBD_OP_READ, 0, 0, 65536, &iov, 1),
		 0);
	{
		unsigned char *want = malloc(65536);

		CHECK(want);
		t_fill(want, 65536, 9);
		CHECK(!memcmp(want, buf, 65536));
		free(want);
	}
	CHECK_EQ(ibnbd_dev_close(dev), 0);
	/* The export keeps the file open until the server goes: lazily. */
	CHECK(umount2(mnt_dir, MNT_DETACH) == 0);
	rmdir(mnt_dir);
	mnt_dir[0] = '\0';
	free(buf);
}

int main(void)
{
	struct ibnbd_geometry g;
	struct ibnbd_clt_opts o;
	struct ibnbd_clt *clt;
	struct ibnbd_dev *dev;
	struct ibtrs_clt *sess;
	char ro_path[128];

	t_watchdog(240);
	f_srv_start(&srv, 0);
	f_export(&srv, "disk", DISK_SIZE, false, disk_path);
	f_export(&srv, "disk2", DISK_SIZE, false, NULL);
	f_export(&srv, "rodisk", DISK_SIZE, true, ro_path);
	sess = f_clt_open(srv.port, 1, "func-io");

	/* Bad arguments of attach. */
	errno = 0;
	CHECK(!ibnbd_clt_attach(NULL, NULL));
	CHECK_EQ(errno, EINVAL);
	ibnbd_clt_opts_init(&o, sizeof(o));
	CHECK_EQ(o.queue_timeout_ms, 30000);
	clt = ibnbd_clt_attach(sess, &o);
	CHECK(clt);

	dev = ibnbd_dev_open(clt, "disk", IBNBD_ACCESS_RW, &g);
	CHECK(dev);
	CHECK_EQ(g.size, DISK_SIZE);
	CHECK_EQ(g.logical_block_size, 512);
	CHECK(g.physical_block_size >= 512);
	CHECK(g.max_io_size >= 4096 && g.max_io_size <= 128 * 1024);
	CHECK_EQ(g.max_io_size % 512, 0);
	CHECK(g.max_segments >= 8);
	CHECK(!(g.flags & IBNBD_DEV_READONLY));
	CHECK_EQ(ibnbd_clt_detach(clt), -EBUSY);

	test_data(dev, &g);
	test_flush(dev);
	test_discard(dev, &g);
	test_local_errors(dev, &g);
	test_modes(clt, dev);
	test_enospc(clt);

	/* After all that the device still works. */
	write_check(dev, 0, 4096, 2, 999);
	CHECK_EQ(ibnbd_dev_close(dev), 0);
	CHECK_EQ(ibnbd_clt_detach(clt), 0);
	ibtrs_clt_close(sess);
	f_srv_stop(&srv);
	printf("func_io: ok\n");
	return 0;
}
