// SPDX-License-Identifier: MIT
/*
 * fuzz_gen.c - writes the seed corpus of tests/fuzz: valid messages made
 * by the real encoders, one file each, under DIR/<target>/.
 *
 * Usage: fuzz_gen DIR. The files are committed (tests/fuzz/corpus); run
 * this again after a change of the wire format. Regression inputs of
 * fixed bugs live beside the seeds and are not written here.
 */
#include <errno.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "gen.h"
#include "ibtrs.h"
#include "proto.h"
#include "ibnbd/proto.h"

static const char *out_dir;

/**
 * gen_write() - write one seed
 * @target: the fuzz target it is for (a subdirectory)
 * @name: the file name
 * @buf: the input
 * @len: its length
 */
void gen_write(const char *target, const char *name, const void *buf,
	       size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, target);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/**
 * gen_proto() - seeds of the ibtrs message decoders
 */
static void gen_proto(void)
{
	struct ibtrs_conn_req cr = {
		.version = IBTRS_PROTO_VER,
		.cid = 0,
		.cid_num = 3,
		.first_conn = true,
		.sess_uuid = { 1, 2, 3, 4 },
		.path_uuid = { 5, 6, 7, 8 },
	};
	struct ibtrs_conn_rsp rsp = {
		.version = IBTRS_PROTO_VER,
		.queue_depth = 128,
		.max_io_size = 128 << 10,
		.chunk_size = (128 << 10) + IBTRS_HDR_ROOM,
		.max_usr_msg = IBTRS_MAX_USR_MSG,
	};
	struct ibtrs_desc desc[3] = {
		{ 0, 0x45670001, 1u << 20 },
		{ 4096, 0x12340002, 8192 },
		{ 1ull << 40, 7, 1 },
	};
	struct ibtrs_req_trailer t = {
		.dir = IBTRS_WRITE,
		.usr_len = 16,
		.gen = 1,
	};
	struct ibtrs_msg_conn_req mcr;
	struct ibtrs_msg_conn_rsp mrsp;
	struct ibtrs_msg_info_req mir;
	uint8_t buf[IBTRS_INFO_RSP_MAX_LEN + 1];
	struct ibtrs_trailer mt;
	size_t n;

	ibtrs_conn_req_encode(&mcr, &cr);
	gen_write("conn_req", "first", &mcr, sizeof(mcr));
	cr.cid = 2;
	cr.first_conn = false;
	cr.recon_cnt = 5;
	ibtrs_conn_req_encode(&mcr, &cr);
	gen_write("conn_req", "io-con", &mcr, sizeof(mcr));

	ibtrs_conn_rsp_encode(&mrsp, &rsp);
	gen_write("conn_rsp", "accept", &mrsp, sizeof(mrsp));
	rsp = (struct ibtrs_conn_rsp){ .version = IBTRS_PROTO_VER,
				       .err = ENXIO };
	ibtrs_conn_rsp_encode(&mrsp, &rsp);
	gen_write("conn_rsp", "reject", &mrsp, sizeof(mrsp));

	ibtrs_info_req_encode(&mir, "sess-a");
	gen_write("info_req", "short", &mir, sizeof(mir));
	memset(buf, 'n', IBTRS_SESSNAME_LEN - 1);
	buf[IBTRS_SESSNAME_LEN - 1] = '\0';
	ibtrs_info_req_encode(&mir, (const char *)buf);
	gen_write("info_req", "longest", &mir, sizeof(mir));

	buf[0] = 64;
	n = ibtrs_info_rsp_encode(buf + 1, desc, 1);
	gen_write("info_rsp", "one", buf, n + 1);
	buf[0] = 3;
	n = ibtrs_info_rsp_encode(buf + 1, desc, 3);
	gen_write("info_rsp", "three", buf, n + 1);

	memset(buf, 0, sizeof(buf));
	ibtrs_trailer_encode(&mt, &t);
	memcpy(buf, &mt, sizeof(mt));
	n = sizeof(mt);
	/* immediate, queue depth, chunk size, chunk id, errno */
	n += gen_le32(buf + n, ibtrs_imm_req(5, 4096 + 16, 18));
	n += gen_le16(buf + n, 128);
	n += gen_le32(buf + n, (128 << 10) + IBTRS_HDR_ROOM);
	n += gen_le32(buf + n, 5);
	n += gen_le32(buf + n, (uint32_t)-EIO);
	gen_write("trailer", "write", buf, n);
	t.dir = IBTRS_READ;
	t.desc = desc[1];
	ibtrs_trailer_encode(&mt, &t);
	memcpy(buf, &mt, sizeof(mt));
	gen_le32(buf + sizeof(mt), ibtrs_imm_rsp(7, -ENOSPC));
	gen_write("trailer", "read", buf, n);
}

/**
 * gen_auth() - seeds of the authentication decoders and the key file
 */
static void gen_auth(void)
{
	static const char key_line[] =
		"alice:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
	struct ibtrs_auth_req ar = { .flags = 0 };
	struct ibtrs_auth_rsp rsp = {
		.flags = IBTRS_RSP_INCARNATION | IBTRS_RSP_NEW_SESS,
		.incarnation = 0x1122334455667788ull,
	};
	struct ibtrs_msg_auth_req mar;
	struct ibtrs_msg_auth_rsp mrsp;
	char buf[1024];
	size_t n;

	memset(ar.pub, 0x42, sizeof(ar.pub));
	ibtrs_auth_req_encode(&mar, &ar);
	gen_write("auth_req", "nokey", &mar, sizeof(mar));
	ar.flags = IBTRS_AUTH_JOIN;
	memset(ar.proof_sess, 0x17, sizeof(ar.proof_sess));
	ibtrs_auth_req_encode(&mar, &ar);
	gen_write("auth_req", "nokey-join", &mar, sizeof(mar));
	ar.flags = IBTRS_AUTH_PSK | IBTRS_AUTH_JOIN;
	ar.id_len = 5;
	memcpy(ar.identity, "alice", 6);
	memset(ar.proof_psk, 0x99, sizeof(ar.proof_psk));
	ibtrs_auth_req_encode(&mar, &ar);
	gen_write("auth_req", "psk-join", &mar, sizeof(mar));
	ar.flags = IBTRS_AUTH_PSK;
	ar.id_len = IBTRS_AUTH_ID_MAX;
	memset(ar.identity, 'i', IBTRS_AUTH_ID_MAX);
	ibtrs_auth_req_encode(&mar, &ar);
	gen_write("auth_req", "psk-longest", &mar, sizeof(mar));

	memset(rsp.pub, 0x24, sizeof(rsp.pub));
	memset(rsp.proof, 0x71, sizeof(rsp.proof));
	ibtrs_auth_rsp_encode(&mrsp, &rsp);
	gen_write("auth_rsp", "new-sess", &mrsp, sizeof(mrsp));
	rsp.flags = IBTRS_RSP_INCARNATION;
	ibtrs_auth_rsp_encode(&mrsp, &rsp);
	gen_write("auth_rsp", "join", &mrsp, sizeof(mrsp));
	rsp = (struct ibtrs_auth_rsp){ .err = EACCES };
	ibtrs_auth_rsp_encode(&mrsp, &rsp);
	gen_write("auth_rsp", "refused", &mrsp, sizeof(mrsp));

	/* The key file: a mode byte, then the file (fuzz_keyring.c). */
	n = (size_t)snprintf(buf, sizeof(buf), "%c%s", 0, key_line);
	gen_write("keyring", "one", buf, n);
	n = (size_t)snprintf(
		buf, sizeof(buf),
		"%c# keys of the cluster\r\n\n%s"
		"bob:ffeeddccbbaa99887766554433221100\t\r\n"
		"carol:%s%s\n",
		0, key_line,
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF");
	gen_write("keyring", "three", buf, n);
	/* A template: 64 keys k0..k63 with the same key. */
	buf[0] = 1;
	buf[1] = 63;
	n = 2 + (size_t)snprintf(buf + 2, sizeof(buf) - 2, "%s",
				 strchr(key_line, ':'));
	gen_write("keyring", "template-64", buf, n);
}

/**
 * gen_ibnbd() - seeds of the ibnbd message decoders
 */
static void gen_ibnbd(void)
{
	struct ibnbd_sess_info si = { .ver_major = IBNBD_PROTO_VER_MAJOR,
				      .ver_minor = IBNBD_PROTO_VER_MINOR,
				      .max_devices = 32 };
	struct ibnbd_open_info oi = {
		.device_id = 3,
		.flags = IBNBD_WIRE_DEV_DISCARD | IBNBD_WIRE_DEV_WRITE_ZEROES |
			 IBNBD_WIRE_DEV_FUA,
		.size = 1ull << 30,
		.logical_block_size = 512,
		.physical_block_size = 4096,
		.max_transfer = 128 << 10,
		.max_discard = 1 << 20,
		.max_write_zeroes = 1 << 20,
		.discard_granularity = 4096,
		.max_segments = 64,
	};
	uint8_t buf[512];
	size_t n;

	n = ibnbd_enc_sess_info(buf, sizeof(buf));
	gen_write("ibnbd_req", "sess_info", buf, n);
	n = ibnbd_enc_open(buf, sizeof(buf), IBNBD_WIRE_ACCESS_RW, "disk0");
	gen_write("ibnbd_req", "open", buf, n);
	n = ibnbd_enc_close(buf, sizeof(buf), 3);
	gen_write("ibnbd_req", "close", buf, n);
	n = ibnbd_enc_io(buf, sizeof(buf), 3, IBNBD_WIRE_OP_WRITE,
			 IBNBD_WIRE_F_FUA, 4096, 8192);
	gen_write("ibnbd_req", "io-write", buf, n);
	n = ibnbd_enc_io(buf, sizeof(buf), 3, IBNBD_WIRE_OP_DISCARD,
			 IBNBD_WIRE_F_NOUNMAP, 1 << 20, 1 << 20);
	gen_write("ibnbd_req", "io-discard", buf, n);

	n = ibnbd_enc_sess_info_rsp(buf, sizeof(buf), &si);
	gen_write("ibnbd_sess_info_rsp", "v1", buf, n);
	n = ibnbd_enc_open_rsp(buf, sizeof(buf), &oi);
	gen_write("ibnbd_open_rsp", "disk", buf, n);
	oi.flags = IBNBD_WIRE_DEV_READONLY;
	oi.max_discard = oi.max_write_zeroes = 0;
	oi.logical_block_size = oi.physical_block_size = 4096;
	n = ibnbd_enc_open_rsp(buf, sizeof(buf), &oi);
	gen_write("ibnbd_open_rsp", "readonly", buf, n);
}

/**
 * main() - write every seed under argv[1]
 * @argc: 2
 * @argv: program name, output directory
 *
 * Return: 0, or 1 on a write error.
 */
int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	gen_proto();
	gen_auth();
	gen_ibnbd();
	gen_tcp();
	gen_ctl();
	gen_srv();
	gen_clt();
	return 0;
}
