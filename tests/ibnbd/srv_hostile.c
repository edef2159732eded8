// SPDX-License-Identifier: MIT
/*
 * srv_hostile.c - the ibnbd server's answers to hand-made requests.
 *
 * An in-process ibtrs server routes ibnbd requests to an ibnbd server
 * exporting temporary files ("disk" rw, "ro" read only); a raw ibtrs
 * client sends messages encoded by hand (proto.c's encoders, then bytes
 * changed), and checks each errno, that a valid request on the same
 * session works after each refusal, that data really lands in the files,
 * the access modes, DISCARD and WRITE_ZEROES on the file, ENOSPC on a full
 * tmpfs (root only), which requests the engine runs inline and which it
 * leaves to the ring, and that the end of a session gives its rw opens
 * back.
 */
#include <endian.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "harness.h"
#include "ibnbd.h"
#include "proto.h"
#include "srv.h"

#define DISK_SIZE (1u << 20)
#define RO_SIZE (64u << 10)
#define BUF_SIZE (128u << 10)

/* The session state of the in-process server: the caller keeps ibnbd's. */
struct t_sess {
	struct ibnbd_srv_sess *nbd;
};

static struct ibnbd_srv *t_nbd;
static pthread_mutex_t t_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t t_cond;
static unsigned int t_disconnects;
static char t_dir[64];

static int t_rdma_ev(struct ibtrs_srv *sess, void *priv,
		     struct ibtrs_srv_op *id, int dir, void *data,
		     size_t datalen, const void *usr, size_t usrlen)
{
	struct t_sess *ts = priv;

	if (!ts || !ibnbd_is_request(usr, usrlen))
		return -EBADMSG;
	return ibnbd_srv_rdma_ev(t_nbd, &ts->nbd, sess, id, dir, data, datalen,
				 usr, usrlen);
}

static int t_link_ev(struct ibtrs_srv *sess, enum ibtrs_srv_link_ev ev,
		     void *priv)
{
	struct t_sess *ts = priv;

	if (ev == IBTRS_SRV_LINK_EV_CONNECTED) {
		ts = calloc(1, sizeof(*ts));
		if (!ts)
			return -ENOMEM;
		ibtrs_srv_set_sess_priv(sess, ts);
		return 0;
	}
	if (ts) {
		ibnbd_srv_sess_free(ts->nbd);
		free(ts);
	}
	ibtrs_srv_set_sess_priv(sess, NULL);
	pthread_mutex_lock(&t_lock);
	t_disconnects++;
	pthread_cond_broadcast(&t_cond);
	pthread_mutex_unlock(&t_lock);
	return 0;
}

/* Wait until @n sessions have ended. */
static void wait_disconnects(unsigned int n)
{
	struct timespec ts = t_deadline(20000);

	pthread_mutex_lock(&t_lock);
	while (t_disconnects < n &&
	       pthread_cond_timedwait(&t_cond, &t_lock, &ts) != ETIMEDOUT)
		;
	CHECK(t_disconnects >= n);
	pthread_mutex_unlock(&t_lock);
}

/* One request with its own tag; the data is @buf, @len bytes. */
static int req(struct ibtrs_clt *c, int dir, const void *msg, size_t msglen,
	       void *buf, size_t len)
{
	struct iovec sg = { .iov_base = buf, .iov_len = len };
	struct ibtrs_tag *tag;
	int ret;

	tag = ibtrs_clt_get_tag(c, IBTRS_IO_CON, IBTRS_TAG_WAIT);
	CHECK(tag);
	/* &sg even without data: the library copies sg_cnt entries of it */
	ret = h_req_sync(c, tag, dir, msg, msglen, &sg, len ? 1 : 0);
	ibtrs_clt_put_tag(c, tag);
	return ret;
}

static int sess_info(struct ibtrs_clt *c, uint8_t major)
{
	struct ibnbd_msg_sess_info m;
	struct ibnbd_sess_info info;
	unsigned char rsp[16];
	int ret;

	CHECK_EQ(ibnbd_enc_sess_info(&m, sizeof(m)), sizeof(m));
	m.ver_major = major;
	memset(rsp, 0xff, sizeof(rsp));
	ret = req(c, IBTRS_READ, &m, sizeof(m), rsp, sizeof(rsp));
	if (ret)
		return ret;
	CHECK_EQ(ibnbd_dec_sess_info_rsp(rsp, sizeof(rsp), &info), 0);
	CHECK_EQ(info.ver_major, IBNBD_PROTO_VER_MAJOR);
	CHECK_EQ(info.max_devices, 4);
	return 0;
}

static int dev_open(struct ibtrs_clt *c, const char *name, uint8_t mode,
		    struct ibnbd_open_info *info)
{
	struct ibnbd_msg_open m;
	unsigned char rsp[64];
	int ret;

	CHECK_EQ(ibnbd_enc_open(&m, sizeof(m), mode, name), sizeof(m));
	memset(rsp, 0xff, sizeof(rsp));
	ret = req(c, IBTRS_READ, &m, sizeof(m), rsp, sizeof(rsp));
	if (ret)
		return ret;
	CHECK_EQ(ibnbd_dec_open_rsp(rsp, sizeof(rsp), info), 0);
	return 0;
}

static int dev_close(struct ibtrs_clt *c, uint32_t id)
{
	struct ibnbd_msg_close m;

	CHECK_EQ(ibnbd_enc_close(&m, sizeof(m), id), sizeof(m));
	return req(c, IBTRS_WRITE, &m, sizeof(m), NULL, 0);
}

/* IO with the direction its op needs and @len data bytes for READ/WRITE. */
static int io(struct ibtrs_clt *c, uint32_t id, uint8_t op, uint16_t flags,
	      uint64_t off, uint32_t len, void *buf)
{
	struct ibnbd_msg_io m;
	bool data = op == IBNBD_WIRE_OP_READ || op == IBNBD_WIRE_OP_WRITE;

	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), id, op, flags, off, len),
		 sizeof(m));
	return req(c, op == IBNBD_WIRE_OP_READ ? IBTRS_READ : IBTRS_WRITE, &m,
		   sizeof(m), buf, data ? len : 0);
}

/* A valid READ of the rw device @id works. */
static void still_ok(struct ibtrs_clt *c, uint32_t id)
{
	static unsigned char b[4096];

	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, 0, 4096, sizeof(b), b), 0);
}

static void mkfile(const char *path, size_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static void test_geometry(const struct ibnbd_open_info *i, uint64_t size,
			  bool ro)
{
	CHECK_EQ(i->size, size);
	CHECK_EQ(i->logical_block_size, 512);
	CHECK_EQ(i->physical_block_size, 4096);
	CHECK_EQ(i->max_transfer, 64u << 10);
	CHECK_EQ(i->max_segments, IBTRS_DEFAULT_MAX_SEGMENTS);
	CHECK(i->flags & IBNBD_WIRE_DEV_DISCARD);
	CHECK(i->flags & IBNBD_WIRE_DEV_WRITE_ZEROES);
	CHECK(i->flags & IBNBD_WIRE_DEV_FUA);
	CHECK(i->flags & IBNBD_WIRE_DEV_WRITE_CACHE);
	CHECK_EQ(!!(i->flags & IBNBD_WIRE_DEV_READONLY), ro);
	CHECK(i->max_discard >= (1u << 20));
	CHECK(i->max_write_zeroes >= (1u << 20));
}

/* Malformed messages: -EPROTO each, then a valid request works. */
static void test_malformed(struct ibtrs_clt *c, uint32_t id)
{
	unsigned char b[4096], m[300];
	struct ibnbd_msg_io *mio = (void *)m;
	struct ibnbd_msg_open *mo = (void *)m;

	/* unknown type */
	CHECK_EQ(ibnbd_enc_close(m, sizeof(m), id), 16);
	m[4] = 99;
	CHECK_EQ(req(c, IBTRS_WRITE, m, 16, NULL, 0), -EPROTO);
	still_ok(c, id);
	/* a length one short and one long */
	CHECK_EQ(ibnbd_enc_io(m, sizeof(m), id, IBNBD_WIRE_OP_READ, 0, 0, 4096),
		 32);
	CHECK_EQ(req(c, IBTRS_READ, m, 31, b, 4096), -EPROTO);
	CHECK_EQ(req(c, IBTRS_READ, m, 33, b, 4096), -EPROTO);
	still_ok(c, id);
	/* a reserved byte set */
	mio->reserved = 1;
	CHECK_EQ(req(c, IBTRS_READ, m, 32, b, 4096), -EPROTO);
	mio->reserved = 0;
	m[6] = 1; /* hdr.reserved */
	CHECK_EQ(req(c, IBTRS_READ, m, 32, b, 4096), -EPROTO);
	m[6] = 0;
	/* an unknown op and an unknown flag */
	mio->op = 5;
	CHECK_EQ(req(c, IBTRS_READ, m, 32, b, 4096), -EPROTO);
	mio->op = 0;
	mio->flags = htole16(0x8);
	CHECK_EQ(req(c, IBTRS_READ, m, 32, b, 4096), -EPROTO);
	still_ok(c, id);
	/* names that could leave the export table */
	CHECK_EQ(ibnbd_enc_open(m, sizeof(m), IBNBD_WIRE_ACCESS_RO, "disk"),
		 272);
	memcpy(mo->name, "../x", 4);
	mo->name_len = htole16(4);
	CHECK_EQ(req(c, IBTRS_READ, m, 272, b, 64), -EPROTO);
	memset(mo->name, 0, sizeof(mo->name));
	memcpy(mo->name, "..", 2);
	mo->name_len = htole16(2);
	CHECK_EQ(req(c, IBTRS_READ, m, 272, b, 64), -EPROTO);
	memcpy(mo->name, "a/b", 3);
	mo->name_len = htole16(3);
	CHECK_EQ(req(c, IBTRS_READ, m, 272, b, 64), -EPROTO);
	mo->access_mode = 3;
	memcpy(mo->name, "dis", 3);
	mo->name[3] = 'k';
	mo->name_len = htole16(4);
	CHECK_EQ(req(c, IBTRS_READ, m, 272, b, 64), -EPROTO);
	still_ok(c, id);
}

/* Checks of the fields against the device, each refused. */
static void test_checks(struct ibtrs_clt *c, uint32_t id,
			const struct ibnbd_open_info *geo)
{
	static unsigned char b[BUF_SIZE];
	struct ibnbd_msg_io m;
	struct ibnbd_msg_sess_info si;

	/* past the end, straddling the end, overflowing */
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, 0, DISK_SIZE, 4096, b), -EINVAL);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, 0, DISK_SIZE - 512, 4096, b),
		 -EINVAL);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE_ZEROES, 0, UINT64_MAX - 511,
		    4096, NULL),
		 -EINVAL);
	still_ok(c, id);
	/* unaligned offset and length */
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, 0, 100, 4096, b), -EINVAL);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE, 0, 0, 1000, b), -EINVAL);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_DISCARD, 0, 512, 100, NULL), -EINVAL);
	/* len 0 */
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_DISCARD, 0, 0, 0, NULL), -EINVAL);
	still_ok(c, id);
	/* len != datalen */
	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), id, IBNBD_WIRE_OP_READ, 0, 0,
			      4096),
		 sizeof(m));
	CHECK_EQ(req(c, IBTRS_READ, &m, sizeof(m), b, 8192), -EINVAL);
	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), id, IBNBD_WIRE_OP_WRITE, 0, 0,
			      4096),
		 sizeof(m));
	CHECK_EQ(req(c, IBTRS_WRITE, &m, sizeof(m), b, 512), -EINVAL);
	/* a WRITE_ZEROES with data, a FLUSH with a length */
	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), id, IBNBD_WIRE_OP_WRITE_ZEROES, 0,
			      0, 4096),
		 sizeof(m));
	CHECK_EQ(req(c, IBTRS_WRITE, &m, sizeof(m), b, 512), -EINVAL);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_FLUSH, 0, 0, 512, NULL), -EINVAL);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_FLUSH, 0, 512, 0, NULL), -EINVAL);
	/* flags the op has not */
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, IBNBD_WIRE_F_FUA, 0, 4096, b),
		 -EINVAL);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE, IBNBD_WIRE_F_NOUNMAP, 0, 4096,
		    b),
		 -EINVAL);
	still_ok(c, id);
	/* over the limits */
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, 0, 0, geo->max_transfer + 512,
		    b),
		 -EMSGSIZE);
	still_ok(c, id);
	/* the wrong direction */
	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), id, IBNBD_WIRE_OP_READ, 0, 0,
			      4096),
		 sizeof(m));
	CHECK_EQ(req(c, IBTRS_WRITE, &m, sizeof(m), b, 4096), -EINVAL);
	CHECK_EQ(ibnbd_enc_io(&m, sizeof(m), id, IBNBD_WIRE_OP_FLUSH, 0, 0, 0),
		 sizeof(m));
	CHECK_EQ(req(c, IBTRS_READ, &m, sizeof(m), NULL, 0), -EINVAL);
	CHECK_EQ(ibnbd_enc_close(&m, sizeof(m), id), 16);
	CHECK_EQ(req(c, IBTRS_READ, &m, 16, NULL, 0), -EINVAL);
	CHECK_EQ(ibnbd_enc_sess_info(&si, sizeof(si)), sizeof(si));
	CHECK_EQ(req(c, IBTRS_WRITE, &si, sizeof(si), b, 16), -EINVAL);
	/* SESS_INFO without room for the answer */
	CHECK_EQ(req(c, IBTRS_READ, &si, sizeof(si), b, 8), -EINVAL);
	still_ok(c, id);
	/* unknown device ids */
	CHECK_EQ(io(c, id ^ 0x10000u, IBNBD_WIRE_OP_READ, 0, 0, 4096, b),
		 -ENODEV);
	CHECK_EQ(io(c, 3, IBNBD_WIRE_OP_READ, 0, 0, 4096, b), -ENODEV);
	CHECK_EQ(io(c, 0xffffu, IBNBD_WIRE_OP_READ, 0, 0, 4096, b), -ENODEV);
	CHECK_EQ(dev_close(c, 0xdead0003u), -ENODEV);
	still_ok(c, id);
	/* an unsupported major version, then the right one */
	CHECK_EQ(sess_info(c, IBNBD_PROTO_VER_MAJOR + 1), -EPROTONOSUPPORT);
	CHECK_EQ(sess_info(c, IBNBD_PROTO_VER_MAJOR), 0);
	/* not an ibnbd message at all: not routed to ibnbd */
	memset(b, 0, 32);
	CHECK_EQ(req(c, IBTRS_WRITE, b, 32, NULL, 0), -EBADMSG);
	still_ok(c, id);
}

/* Data lands in the file; DISCARD, WRITE_ZEROES, FLUSH, FUA, PREFLUSH. */
/*
 * Data, FUA, PREFLUSH, FLUSH, DISCARD and WRITE_ZEROES on the rw device @id
 * of the file @path. @unwritten_hole: the file system reports allocated
 * but unwritten blocks as a hole (tmpfs), as the NOUNMAP fallback leaves
 * them where ZERO_RANGE is missing.
 */
static void test_data(struct ibtrs_clt *c, uint32_t id, const char *path,
		      bool unwritten_hole)
{
	static unsigned char b[BUF_SIZE], f[BUF_SIZE];
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct stat st;
	blkcnt_t blocks;
	off_t hole;
	size_t i;

	CHECK(fd >= 0);
	/* WRITE: the file has it */
	t_fill(b, 65536, 1);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE, 0, 65536, 65536, b), 0);
	CHECK_EQ(pread(fd, f, 65536, 65536), 65536);
	CHECK(!memcmp(b, f, 65536));
	/* READ: what the file has */
	t_fill(f, 8192, 2);
	CHECK_EQ(pwrite(fd, f, 8192, 512 * 3), 8192);
	memset(b, 0, 8192);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, 0, 512 * 3, 8192, b), 0);
	CHECK(!memcmp(b, f, 8192));
	/* the last block of the device */
	t_fill(b, 512, 3);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE, IBNBD_WIRE_F_FUA,
		    DISK_SIZE - 512, 512, b),
		 0);
	CHECK_EQ(pread(fd, f, 512, DISK_SIZE - 512), 512);
	CHECK(!memcmp(b, f, 512));
	/* PREFLUSH + FUA write, FLUSH */
	t_fill(b, 4096, 4);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE,
		    IBNBD_WIRE_F_FUA | IBNBD_WIRE_F_PREFLUSH, 8192, 4096, b),
		 0);
	CHECK_EQ(pread(fd, f, 4096, 8192), 4096);
	CHECK(!memcmp(b, f, 4096));
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_FLUSH, 0, 0, 0, NULL), 0);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_FLUSH, IBNBD_WIRE_F_PREFLUSH, 0, 0,
		    NULL),
		 0);

	/* DISCARD makes a hole that reads as zeros */
	t_fill(b, 65536, 5);
	CHECK_EQ(pwrite(fd, b, 65536, 256 << 10), 65536);
	CHECK_EQ(fsync(fd), 0);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_DISCARD, 0, 256 << 10, 65536, NULL),
		 0);
	hole = lseek(fd, 256 << 10, SEEK_HOLE);
	CHECK_EQ(hole, 256 << 10);
	memset(b, 0xaa, 65536);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_READ, 0, 256 << 10, 65536, b), 0);
	for (i = 0; i < 65536; i++)
		CHECK_EQ(b[i], 0);

	/* WRITE_ZEROES without NOUNMAP: zeros, a hole */
	t_fill(b, 65536, 6);
	CHECK_EQ(pwrite(fd, b, 65536, 512 << 10), 65536);
	CHECK_EQ(fsync(fd), 0);
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE_ZEROES, IBNBD_WIRE_F_FUA,
		    512 << 10, 65536, NULL),
		 0);
	CHECK_EQ(pread(fd, f, 65536, 512 << 10), 65536);
	for (i = 0; i < 65536; i++)
		CHECK_EQ(f[i], 0);
	CHECK_EQ(lseek(fd, 512 << 10, SEEK_HOLE), 512 << 10);
	/* with NOUNMAP: zeros, still allocated */
	t_fill(b, 65536, 7);
	CHECK_EQ(pwrite(fd, b, 65536, 640 << 10), 65536);
	CHECK_EQ(fsync(fd), 0);
	CHECK_EQ(fstat(fd, &st), 0);
	blocks = st.st_blocks;
	CHECK_EQ(io(c, id, IBNBD_WIRE_OP_WRITE_ZEROES, IBNBD_WIRE_F_NOUNMAP,
		    640 << 10, 65536, NULL),
		 0);
	CHECK_EQ(pread(fd, f, 65536, 640 << 10), 65536);
	for (i = 0; i < 65536; i++)
		CHECK_EQ(f[i], 0);
	CHECK_EQ(fstat(fd, &st), 0);
	CHECK(st.st_blocks >= blocks);
	if (!unwritten_hole)
		CHECK(lseek(fd, 640 << 10, SEEK_HOLE) >= (640 << 10) + 65536);
	close(fd);
}

/*
 * A write on a full tmpfs fails with -ENOSPC, and the next request works.
 * Needs root for the mount.
 */
static void test_enospc(struct ibtrs_clt *c, uint32_t id_disk)
{
	static unsigned char b[65536];
	struct ibnbd_open_info info;
	char mnt[96], path[128];
	int ret = 0, i;

	snprintf(mnt, sizeof(mnt), "%s/small", t_dir);
	CHECK_EQ(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k")) {
		printf("SKIP part: no tmpfs mount here (%s): ENOSPC not tested\n",
		       strerror(errno));
		rmdir(mnt);
		return;
	}
	snprintf(path, sizeof(path), "%s/full", mnt);
	mkfile(path, DISK_SIZE);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "full", path, false), 0);
	CHECK_EQ(dev_open(c, "full", IBNBD_WIRE_ACCESS_RW, &info), 0);
	t_fill(b, sizeof(b), 8);
	for (i = 0; i < (int)(DISK_SIZE / sizeof(b)) && !ret; i++)
		ret = io(c, info.device_id, IBNBD_WIRE_OP_WRITE, 0,
			 (uint64_t)i * sizeof(b), sizeof(b), b);
	CHECK_EQ(ret, -ENOSPC);
	CHECK(i > 1);
	/* the session goes on: the same device reads, the other writes */
	CHECK_EQ(io(c, info.device_id, IBNBD_WIRE_OP_READ, 0, 0, 4096, b), 0);
	CHECK_EQ(io(c, id_disk, IBNBD_WIRE_OP_WRITE, 0, 0, 4096, b), 0);
	CHECK_EQ(dev_close(c, info.device_id), 0);
	printf("ENOSPC after %d writes of 64 KiB on a 256 KiB tmpfs\n", i);
	/* The export keeps the file open: lazily unmounted. */
	CHECK_EQ(umount2(mnt, MNT_DETACH), 0);
	rmdir(mnt);
}

/*
 * A hand-made request of @len bytes at @off on @exp, of one step (and a
 * FUA write with @dsync), run by srv_io_inline() as do_io() would.
 * Return: whether it finished inline; *@err its result then.
 */
static bool inline_io(struct srv_export *exp, uint8_t step, bool dsync,
		      uint64_t off, uint32_t len, void *buf, struct srv_io *io,
		      int *err)
{
	memset(io, 0, sizeof(*io));
	io->file = &exp->file;
	io->data = buf;
	io->offset = off;
	io->len = len;
	io->steps[0] = step;
	io->nsteps = 1;
	io->dsync = dsync;
	*err = 1;
	return srv_io_inline(io, err);
}

/*
 * The engine's inline path (srv_io_inline()). A file of tmpfs runs every
 * step inline: test_data() through the server on one (root only, for
 * the mount). A file elsewhere reads its page cache with RWF_NOWAIT
 * inline, a FUA write never runs inline, a write the file system cannot
 * do with RWF_NOWAIT (ext4) goes to the ring untouched, to a worker at
 * once (IOSQE_ASYNC), and RWF_NOWAIT is not tried again for writes. An
 * O_DIRECT export never runs inline.
 */
static void test_engine(struct ibtrs_clt *c, const char *disk)
{
	static unsigned char b[65536], f[65536];
	struct ibnbd_open_info info;
	struct srv_export *e, fake;
	char mnt[96], path[128];
	struct statfs sfs;
	struct srv_io io;
	int fd, mfd = -1, err;
	bool done;

	pthread_mutex_lock(&t_nbd->lock);
	e = srv_export_find(t_nbd, "disk");
	pthread_mutex_unlock(&t_nbd->lock);
	CHECK(e);
	CHECK_EQ(statfs(t_dir, &sfs), 0);
	CHECK_EQ(e->file.membacked, sfs.f_type == TMPFS_MAGIC);
	fd = open(disk, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	/* a page cache hit: read inline */
	t_fill(f, 8192, 20);
	CHECK_EQ(pwrite(fd, f, 8192, 24576), 8192);
	memset(b, 0, 8192);
	done = inline_io(e, SRV_STEP_READ, false, 24576, 8192, b, &io, &err);
	CHECK(done || !__atomic_load_n(&e->file.nowait[0], __ATOMIC_RELAXED));
	if (done) {
		CHECK_EQ(err, 0);
		CHECK(!memcmp(b, f, 8192));
	}
	printf("engine: a cached read of %s runs %s\n", disk,
	       done ? "inline" : "on the ring");
	/* a FUA write waits for the device: the ring's, untouched */
	if (!e->file.membacked) {
		CHECK(!inline_io(e, SRV_STEP_WRITE, true, 0, 4096, b, &io,
				 &err));
		CHECK_EQ(io.done, 0);
		CHECK_EQ(io.step, 0);
	}
	/* a plain write: inline, or left to a ring worker */
	t_fill(b, 4096, 21);
	done = inline_io(e, SRV_STEP_WRITE, false, 32768, 4096, b, &io, &err);
	if (done) {
		CHECK_EQ(err, 0);
		CHECK_EQ(pread(fd, f, 4096, 32768), 4096);
		CHECK(!memcmp(b, f, 4096));
	} else {
		CHECK(!e->file.membacked);
		CHECK(io.async);
		CHECK(io.done < io.len);
		CHECK(!__atomic_load_n(&e->file.nowait[1], __ATOMIC_RELAXED));
		/* not tried again: still handed over untouched */
		CHECK(!inline_io(e, SRV_STEP_WRITE, false, 32768, 4096, b, &io,
				 &err));
		CHECK(io.async);
		CHECK_EQ(io.done, 0);
	}
	printf("engine: a buffered write of %s runs %s\n", disk,
	       done ? "inline" : "on the ring");
	/* O_DIRECT: never inline */
	fake = *e;
	fake.file.direct = true;
	CHECK(!inline_io(&fake, SRV_STEP_READ, false, 24576, 8192, b, &io,
			 &err));
	CHECK_EQ(io.done, 0);
	close(fd);

	snprintf(mnt, sizeof(mnt), "%s/mem", t_dir);
	CHECK_EQ(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=4m")) {
		printf("SKIP part: no tmpfs mount here (%s): inline tmpfs not tested\n",
		       strerror(errno));
		rmdir(mnt);
		return;
	}
	snprintf(path, sizeof(path), "%s/disk", mnt);
	mkfile(path, DISK_SIZE);
	mfd = open(path, O_RDWR | O_CLOEXEC);
	if (mfd >= 0 && ibnbd_srv_add_export(t_nbd, "mem", path, false)) {
		close(mfd);
		mfd = -1;
	}
	/* The export and mfd keep the tmpfs: nothing stays mounted. */
	CHECK_EQ(umount2(mnt, MNT_DETACH), 0);
	rmdir(mnt);
	CHECK(mfd >= 0);
	pthread_mutex_lock(&t_nbd->lock);
	e = srv_export_find(t_nbd, "mem");
	pthread_mutex_unlock(&t_nbd->lock);
	CHECK(e);
	CHECK(e->file.membacked);
	/* every step inline, holes and fdatasync too */
	CHECK(inline_io(e, SRV_STEP_READ, false, 0, 4096, b, &io, &err));
	CHECK_EQ(err, 0);
	CHECK(inline_io(e, SRV_STEP_WRITE, true, 0, 4096, b, &io, &err));
	CHECK_EQ(err, 0);
	CHECK(inline_io(e, SRV_STEP_FSYNC, false, 0, 0, NULL, &io, &err));
	CHECK_EQ(err, 0);
	/* tmpfs has no ZERO_RANGE: without the fallback the error... */
	CHECK(inline_io(e, SRV_STEP_ZERO, false, 0, 4096, NULL, &io, &err));
	CHECK_EQ(err, -EOPNOTSUPP);
	/* ...with it PUNCH_HOLE then an allocation, inline */
	CHECK(inline_io(e, SRV_STEP_WRITE, false, 8192, 4096, b, &io, &err));
	CHECK_EQ(err, 0);
	memset(&io, 0, sizeof(io));
	io.file = &e->file;
	io.offset = 8192;
	io.len = 4096;
	io.steps[0] = SRV_STEP_ZERO;
	io.nsteps = 1;
	io.zero_fallback = true;
	CHECK(srv_io_inline(&io, &err));
	CHECK_EQ(err, 0);
	CHECK_EQ(io.nsteps, 2);
	CHECK_EQ(pread(mfd, f, 4096, 8192), 4096);
	CHECK(!memcmp(f, (unsigned char[4096]){ 0 }, 4096));
	/* through the server, answered from the thread of rdma_ev */
	CHECK_EQ(dev_open(c, "mem", IBNBD_WIRE_ACCESS_RW, &info), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	test_data(c, info.device_id, path, true);
	CHECK_EQ(dev_close(c, info.device_id), 0);
	close(mfd);
}

/*
 * Many requests at once on a ring of 2 entries (4 CQEs): most wait in the
 * server's backlog, multi-step ones (PREFLUSH, FUA) too; all complete and
 * their data is in the file.
 */
static void test_concurrent(struct ibtrs_clt *c, uint32_t id, const char *path)
{
	enum { N = 16, SZ = 8192 };
	static unsigned char b[N][SZ], f[SZ];
	static const uint16_t flags[4] = { 0, IBNBD_WIRE_F_FUA,
					   IBNBD_WIRE_F_PREFLUSH,
					   IBNBD_WIRE_F_FUA |
						   IBNBD_WIRE_F_PREFLUSH };
	struct ibnbd_msg_io m[N];
	struct ibtrs_tag *tags[N];
	struct iovec usr[N], sg[N];
	struct h_req r[N];
	struct h_wait w;
	int fd, i, pass;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	for (pass = 0; pass < 2; pass++) {
		int dir = pass ? IBTRS_READ : IBTRS_WRITE;

		h_wait_init(&w);
		for (i = 0; i < N; i++) {
			tags[i] = ibtrs_clt_get_tag(c, IBTRS_IO_CON,
						    IBTRS_TAG_WAIT);
			CHECK(tags[i]);
			if (!pass)
				t_fill(b[i], SZ, 100 + (unsigned int)i);
			else
				memset(b[i], 0, SZ);
			CHECK_EQ(ibnbd_enc_io(&m[i], sizeof(m[i]), id,
					      pass ? IBNBD_WIRE_OP_READ
						   : IBNBD_WIRE_OP_WRITE,
					      pass ? 0 : flags[i % 4],
					      (uint64_t)i * SZ, SZ),
				 sizeof(m[i]));
			usr[i] = (struct iovec){ &m[i], sizeof(m[i]) };
			sg[i] = (struct iovec){ b[i], SZ };
			r[i] = (struct h_req){ .w = &w };
		}
		for (i = 0; i < N; i++)
			CHECK_EQ(ibtrs_clt_request(dir, h_conf, c, tags[i],
						   &r[i], &usr[i], 1, SZ,
						   &sg[i], 1),
				 0);
		CHECK(h_wait_calls(&w, N, H_REQ_TIMEOUT_S * 1000));
		for (i = 0; i < N; i++) {
			CHECK_EQ(r[i].err, 0);
			CHECK_EQ(r[i].calls, 1);
			ibtrs_clt_put_tag(c, tags[i]);
			CHECK_EQ(pread(fd, f, SZ, (off_t)i * SZ), SZ);
			CHECK(!memcmp(b[i], f, SZ));
		}
		h_wait_destroy(&w);
	}
	close(fd);
}

/*
 * A block device export (a loop device over a file, when root and
 * losetup are here): its geometry from the ioctls, data in the backing
 * file, DISCARD and WRITE_ZEROES with the same fallocate modes.
 */
static void test_blkdev(struct ibtrs_clt *c)
{
	static unsigned char b[8192], f[8192];
	struct ibnbd_open_info i;
	char file[96], cmd[256], dev[64] = "";
	FILE *p;
	int fd;
	size_t k;

	snprintf(file, sizeof(file), "%s/loop.img", t_dir);
	mkfile(file, 4u << 20);
	snprintf(cmd, sizeof(cmd), "losetup --find --show '%s' 2>/dev/null",
		 file);
	p = geteuid() ? NULL : popen(cmd, "r");
	if (p) {
		if (!fgets(dev, sizeof(dev), p))
			dev[0] = '\0';
		pclose(p);
	}
	dev[strcspn(dev, "\n")] = '\0';
	if (strncmp(dev, "/dev/loop", 9)) {
		printf("SKIP part: no loop device here: block devices not tested\n");
		unlink(file);
		return;
	}
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "blk", dev, false), 0);
	/*
	 * Detached now: the export's open keeps the device until the
	 * process ends, however the test ends.
	 */
	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", dev);
	CHECK_EQ(system(cmd), 0);
	CHECK_EQ(dev_open(c, "blk", IBNBD_WIRE_ACCESS_RW, &i), 0);
	CHECK_EQ(i.size, 4u << 20);
	CHECK(i.logical_block_size >= 512);
	CHECK(i.physical_block_size >= i.logical_block_size);
	CHECK(i.flags & IBNBD_WIRE_DEV_WRITE_ZEROES);
	t_fill(b, sizeof(b), 42);
	CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_WRITE, IBNBD_WIRE_F_FUA,
		    65536, sizeof(b), b),
		 0);
	CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_FLUSH, 0, 0, 0, NULL), 0);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, f, sizeof(f), 65536), sizeof(f));
	CHECK(!memcmp(b, f, sizeof(f)));
	CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_WRITE_ZEROES,
		    IBNBD_WIRE_F_NOUNMAP, 65536, 4096, NULL),
		 0);
	CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_WRITE_ZEROES, 0, 65536 + 4096,
		    4096, NULL),
		 0);
	memset(f, 0xaa, sizeof(f));
	CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_READ, 0, 65536, sizeof(f), f),
		 0);
	for (k = 0; k < sizeof(f); k++)
		CHECK_EQ(f[k], 0);
	if (i.flags & IBNBD_WIRE_DEV_DISCARD) {
		CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_WRITE, 0, 0, 4096, b),
			 0);
		CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_DISCARD, 0, 0, 4096,
			    NULL),
			 0);
		CHECK_EQ(io(c, i.device_id, IBNBD_WIRE_OP_READ, 0, 0, 4096, f),
			 0);
		for (k = 0; k < 4096; k++)
			CHECK_EQ(f[k], 0);
	}
	close(fd);
	CHECK_EQ(dev_close(c, i.device_id), 0);
	printf("block device %s: %u-byte blocks, discard %s\n", dev,
	       i.logical_block_size,
	       i.flags & IBNBD_WIRE_DEV_DISCARD ? "yes" : "no");
	unlink(file);
}

/*
 * An export directory: its files and block devices by name, not its
 * subdirectories, FIFOs or anything outside it.
 */
static void test_export_dir(struct ibtrs_clt *c)
{
	char d[96], p[128];
	struct ibnbd_open_info i;

	snprintf(d, sizeof(d), "%s/exp", t_dir);
	CHECK_EQ(mkdir(d, 0700), 0);
	snprintf(p, sizeof(p), "%s/e1", d);
	mkfile(p, 8192);
	snprintf(p, sizeof(p), "%s/e2", d);
	mkfile(p, 16384);
	snprintf(p, sizeof(p), "%s/sub", d);
	CHECK_EQ(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/fifo", d);
	CHECK_EQ(mkfifo(p, 0600), 0);
	CHECK_EQ(ibnbd_srv_add_export_dir(t_nbd, p, true), -ENOTDIR);
	CHECK_EQ(ibnbd_srv_add_export_dir(t_nbd, d, true), 2);
	/* a second time: the names are taken */
	CHECK_EQ(ibnbd_srv_add_export_dir(t_nbd, d, true), -EEXIST);
	CHECK_EQ(dev_open(c, "e1", IBNBD_WIRE_ACCESS_RO, &i), 0);
	CHECK_EQ(i.size, 8192);
	CHECK(i.flags & IBNBD_WIRE_DEV_READONLY);
	CHECK_EQ(dev_close(c, i.device_id), 0);
	CHECK_EQ(dev_open(c, "e2", IBNBD_WIRE_ACCESS_RO, &i), 0);
	CHECK_EQ(i.size, 16384);
	CHECK_EQ(dev_close(c, i.device_id), 0);
	CHECK_EQ(dev_open(c, "e2", IBNBD_WIRE_ACCESS_RW, &i), -EROFS);
	CHECK_EQ(dev_open(c, "sub", IBNBD_WIRE_ACCESS_RO, &i), -ENOENT);
	CHECK_EQ(dev_open(c, "fifo", IBNBD_WIRE_ACCESS_RO, &i), -ENOENT);
	CHECK_EQ(dev_open(c, "exp", IBNBD_WIRE_ACCESS_RO, &i), -ENOENT);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub", d);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/e1", d);
	unlink(p);
	snprintf(p, sizeof(p), "%s/e2", d);
	unlink(p);
	rmdir(d);
}

int main(void)
{
	struct ibnbd_open_info d1, d2, r1, r2, x;
	struct ibnbd_srv_opts no;
	struct ibtrs_srv_opts so;
	struct ibtrs_srv_ctx *ctx;
	struct ibtrs_clt *c1, *c2, *c3;
	char disk[96], ro[96];
	uint32_t ids[4];
	uint16_t port;
	int i;

	t_watchdog(240);
	t_cond_init(&t_cond);
	snprintf(t_dir, sizeof(t_dir), "/tmp/ibnbd-hostile.XXXXXX");
	CHECK(mkdtemp(t_dir));
	snprintf(disk, sizeof(disk), "%s/disk", t_dir);
	snprintf(ro, sizeof(ro), "%s/ro", t_dir);
	mkfile(disk, DISK_SIZE + 100); /* the size rounds down */
	mkfile(ro, RO_SIZE);

	ibnbd_srv_opts_init(&no, sizeof(no));
	no.max_io_size = 64u << 10;
	no.max_devices = 4;
	no.ring_entries = 2; /* test_concurrent() fills it */
	t_nbd = ibnbd_srv_create(&no);
	if (!t_nbd && errno == EOPNOTSUPP) {
		printf("SKIP: built without liburing\n");
		return T_SKIP;
	}
	CHECK(t_nbd);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "disk", disk, false), 0);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "ro", ro, true), 0);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "disk", ro, true), -EEXIST);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "a/b", ro, true), -EINVAL);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "..", ro, true), -EINVAL);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "dir", t_dir, true), -EINVAL);
	CHECK_EQ(ibnbd_srv_add_export(t_nbd, "none", "/nonexistent/x", true),
		 -ENOENT);

	ibtrs_srv_opts_init(&so, sizeof(so));
	so.port = 0;
	so.no_control = true;
	so.max_io_size = BUF_SIZE;
	so.queue_depth = 16;
	so.rdma_ev = t_rdma_ev;
	so.link_ev = t_link_ev;
	so.sess_grace_ms = 0;
	ctx = ibtrs_srv_open_opts(&so);
	CHECK(ctx);
	port = ibtrs_srv_get_port(ctx);

	c1 = h_clt_open("hostile-1", port, 1, 0, NULL, NULL);
	c2 = h_clt_open("hostile-2", port, 1, 0, NULL, NULL);
	CHECK_EQ(sess_info(c1, IBNBD_PROTO_VER_MAJOR), 0);

	/* access modes */
	CHECK_EQ(dev_open(c1, "nosuch", IBNBD_WIRE_ACCESS_RO, &x), -ENOENT);
	CHECK_EQ(dev_open(c1, "ro", IBNBD_WIRE_ACCESS_RW, &x), -EROFS);
	CHECK_EQ(dev_open(c1, "ro", IBNBD_WIRE_ACCESS_MIGRATION, &x), -EROFS);
	CHECK_EQ(dev_open(c1, "disk", IBNBD_WIRE_ACCESS_RW, &d1), 0);
	test_geometry(&d1, DISK_SIZE, false);
	CHECK_EQ(dev_open(c2, "disk", IBNBD_WIRE_ACCESS_RW, &x), -EBUSY);
	CHECK_EQ(dev_open(c1, "disk", IBNBD_WIRE_ACCESS_RW, &x), -EBUSY);
	CHECK_EQ(dev_open(c2, "disk", IBNBD_WIRE_ACCESS_MIGRATION, &d2), 0);
	test_geometry(&d2, DISK_SIZE, false);
	CHECK_EQ(dev_open(c1, "ro", IBNBD_WIRE_ACCESS_RO, &r1), 0);
	test_geometry(&r1, RO_SIZE, true);
	CHECK_EQ(dev_open(c2, "ro", IBNBD_WIRE_ACCESS_RO, &r2), 0);
	CHECK_EQ(dev_open(c2, "disk", IBNBD_WIRE_ACCESS_RO, &x), 0);
	test_geometry(&x, DISK_SIZE, true);
	/* a write through an ro open */
	{
		static unsigned char b[4096];

		CHECK_EQ(io(c2, x.device_id, IBNBD_WIRE_OP_WRITE, 0, 0, 4096,
			    b),
			 -EROFS);
		CHECK_EQ(io(c2, x.device_id, IBNBD_WIRE_OP_DISCARD, 0, 0, 4096,
			    NULL),
			 -EROFS);
		CHECK_EQ(io(c2, r2.device_id, IBNBD_WIRE_OP_WRITE_ZEROES, 0, 0,
			    4096, NULL),
			 -EROFS);
		CHECK_EQ(io(c2, x.device_id, IBNBD_WIRE_OP_READ, 0, 0, 4096, b),
			 0);
		CHECK_EQ(io(c2, d2.device_id, IBNBD_WIRE_OP_WRITE, 0, 0, 4096,
			    b),
			 0);
	}
	/* c2 closes: its ids are gone */
	CHECK_EQ(dev_close(c2, x.device_id), 0);
	CHECK_EQ(dev_close(c2, x.device_id), -ENODEV);
	CHECK_EQ(io(c2, x.device_id, IBNBD_WIRE_OP_READ, 0, 0, 4096,
		    (unsigned char[4096]){ 0 }),
		 -ENODEV);
	CHECK_EQ(dev_close(c2, d2.device_id), 0);

	/* devices per session: max_devices (4) */
	for (i = 0; i < 4; i++) {
		CHECK_EQ(dev_open(c2, "ro", IBNBD_WIRE_ACCESS_RO, &x),
			 i < 3 ? 0 : -EMFILE);
		if (i < 3)
			ids[i] = x.device_id;
	}
	/* a reopened slot gets a new id: the closed one stays unknown */
	CHECK_EQ(dev_close(c2, ids[1]), 0);
	CHECK_EQ(dev_open(c2, "ro", IBNBD_WIRE_ACCESS_RO, &x), 0);
	CHECK(x.device_id != ids[1]);
	CHECK_EQ(dev_close(c2, ids[1]), -ENODEV);

	test_malformed(c1, d1.device_id);
	test_checks(c1, d1.device_id, &d1);
	test_data(c1, d1.device_id, disk, false);
	test_concurrent(c1, d1.device_id, disk);
	test_enospc(c1, d1.device_id);
	test_engine(c1, disk);
	test_export_dir(c1);
	test_blkdev(c1);

	/* the end of a session gives its rw open back */
	c3 = h_clt_open("hostile-3", port, 1, 0, NULL, NULL);
	CHECK_EQ(dev_open(c3, "disk", IBNBD_WIRE_ACCESS_RW, &x), -EBUSY);
	ibtrs_clt_close(c1);
	wait_disconnects(1);
	CHECK_EQ(dev_open(c3, "disk", IBNBD_WIRE_ACCESS_RW, &x), 0);
	still_ok(c3, x.device_id);

	ibtrs_clt_close(c2);
	ibtrs_clt_close(c3);
	wait_disconnects(3);
	ibtrs_srv_close(ctx);
	ibnbd_srv_destroy(t_nbd);
	unlink(disk);
	unlink(ro);
	rmdir(t_dir);
	printf("ok\n");
	return 0;
}
