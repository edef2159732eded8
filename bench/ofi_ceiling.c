// SPDX-License-Identifier: MIT
/*
 * ofi_ceiling.c - the fastest a libfabric provider moves ibtrs-shaped
 * traffic over one loopback FI_EP_MSG connection, with no library in the
 * way: what bench/ceiling.c is for TCP, for the ofi backend.
 *
 * A client process and a server process, one thread each, one endpoint
 * each, both polling their completion queues all the time. Each side
 * registers a region of --qd chunks of --bs bytes and sends its address and
 * key in the connection's private data. A WRITE request is an
 * fi_writedata() of --bs bytes into the server's chunk with the request's
 * id as remote CQ data; the server answers each with a zero-length
 * fi_writedata() carrying the id. A READ request is a zero-length
 * fi_writedata(); the server answers with --bs bytes written into the
 * client's chunk. The client keeps --qd requests in flight and sends a new
 * one from each answer, as "ibtrs bench --submit callback" does: the
 * operations and immediates the ofi backend uses, without its headers,
 * bounce buffers, tags, paths or statistics.
 *
 * Where the provider asks for FI_RX_CQ_DATA, every incoming immediate
 * takes a posted receive, as in the backend.
 *
 * It prints one JSON line: requests per second, GB/s and CPU time per
 * request of each side (getrusage). bench/compare shows the ofi backend as
 * a fraction of it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define API FI_VERSION(1, 17)
#define BATCH 64
#define MAX_QD 1024
#define MAX_BS (1u << 20)
#define SETUP_MS 10000

struct cfg {
	bool write;
	uint32_t bs;
	uint32_t qd;
	double time_s;
	const char *prov;
};

/* What each side tells the other in the connection's private data. */
struct region {
	uint64_t addr;
	uint64_t key;
};

struct end {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_mr *mr;
	char *buf; /* qd chunks of bs bytes */
	void *desc;
	struct region mine, peer;
	bool rx_cq_data;
	struct fi_context2 rx_ctx[2 * MAX_QD];
	unsigned int tx_out; /* writes not yet completed locally */
};

static const struct cfg *cfg;

static void fail(const char *what, long ret)
{
	fprintf(stderr, "ibtrs-ofi-ceiling: %s: %s\n", what,
		ret < 0 ? fi_strerror((int)-ret) : strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The provider's first FI_EP_MSG entry with RMA and remote CQ data. */
static struct fi_info *getinfo(const char *node, const char *service,
			       uint64_t flags)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	if (!hints)
		fail("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup(cfg->prov);
	ret = fi_getinfo(API, node, service, flags, hints, &info);
	if (ret)
		fail(cfg->prov, ret);
	if (!info->domain_attr || info->domain_attr->cq_data_size < 4) {
		fprintf(stderr, "ibtrs-ofi-ceiling: %s: no 4-byte CQ data\n",
			cfg->prov);
		exit(1);
	}
	fi_freeinfo(hints);
	return info;
}

/* Fabric, domain and event queue of @info. */
static void open_domain(struct end *e, struct fi_info *info)
{
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	e->info = info;
	ret = fi_fabric(info->fabric_attr, &e->fabric, NULL);
	if (!ret)
		ret = fi_domain(e->fabric, info, &e->domain, NULL);
	if (!ret)
		ret = fi_eq_open(e->fabric, &eq_attr, &e->eq, NULL);
	if (ret)
		fail("domain", ret);
}

static void post_recv(struct end *e, unsigned int i)
{
	ssize_t r;

	while ((r = fi_recv(e->ep, NULL, 0, NULL, 0, &e->rx_ctx[i])) ==
	       -FI_EAGAIN)
		;
	if (r)
		fail("fi_recv", r);
}

/* The endpoint of @info (an fi_getinfo or a connection request entry),
 * its queues and the registered region, enabled. */
static void open_ep(struct end *e, struct fi_info *info)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA,
				      .wait_obj = FI_WAIT_NONE,
				      .size = 4 * (size_t)cfg->qd };
	size_t len = (size_t)cfg->qd * cfg->bs;
	uint64_t mr_mode = e->info->domain_attr->mr_mode;
	unsigned int i;
	int ret;

	e->rx_cq_data =
		(info->mode | (info->rx_attr ? info->rx_attr->mode : 0)) &
		FI_RX_CQ_DATA;
	e->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!e->buf)
		fail("region", -FI_ENOMEM);
	memset(e->buf, 0x5a, len);
	ret = fi_mr_reg(e->domain, e->buf, len,
			FI_WRITE | FI_REMOTE_WRITE | FI_READ | FI_REMOTE_READ,
			0, (mr_mode & FI_MR_PROV_KEY) ? 0 : 1, 0, &e->mr, NULL);
	if (ret)
		fail("fi_mr_reg", ret);
	e->desc = fi_mr_desc(e->mr);
	e->mine.key = fi_mr_key(e->mr);
	e->mine.addr = (mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)e->buf : 0;
	ret = fi_endpoint(e->domain, info, &e->ep, NULL);
	if (!ret)
		ret = fi_cq_open(e->domain, &cq_attr, &e->txcq, NULL);
	if (!ret)
		ret = fi_cq_open(e->domain, &cq_attr, &e->rxcq, NULL);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(e->ep);
	if (ret)
		fail("endpoint", ret);
	if (e->rx_cq_data)
		for (i = 0; i < 2 * cfg->qd; i++)
			post_recv(e, i);
}

/* The next event of the connection, within the setup time. */
static uint32_t wait_cm(struct end *e, struct fid_eq *eq,
			struct fi_eq_cm_entry *ent, size_t len)
{
	uint32_t event;
	ssize_t n = fi_eq_sread(eq, &event, ent, len, SETUP_MS, 0);

	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };

		fi_eq_readerr(eq, &err, 0);
		fail("connection", -(long)err.err);
	}
	if (n < (ssize_t)sizeof(*ent))
		fail("connection event", n < 0 ? n : -FI_EOTHER);
	(void)e;
	return event;
}

/* One fi_writedata(); polls the transmit queue while the provider is full. */
static void write_data(struct end *e, uint32_t id, uint32_t len, bool to_peer)
{
	struct fi_cq_data_entry c[BATCH];
	char *src = e->buf + (size_t)id * cfg->bs;
	uint64_t raddr = e->peer.addr + (to_peer ? (uint64_t)id * cfg->bs : 0);
	ssize_t r;

	for (;;) {
		r = fi_writedata(e->ep, len ? src : NULL, len,
				 len ? e->desc : NULL, id, 0, raddr,
				 e->peer.key, NULL);
		if (r != -FI_EAGAIN)
			break;
		r = fi_cq_read(e->txcq, c, BATCH);
		if (r > 0)
			e->tx_out -= (unsigned int)r;
		else if (r != -FI_EAGAIN)
			fail("send completion", r);
	}
	if (r)
		fail("fi_writedata", r);
	e->tx_out++;
}

/* Reap local write completions; every write is signalled. */
static void reap_tx(struct end *e)
{
	struct fi_cq_data_entry c[BATCH];
	ssize_t r = fi_cq_read(e->txcq, c, BATCH);

	if (r > 0)
		e->tx_out -= (unsigned int)r;
	else if (r != -FI_EAGAIN)
		fail("send completion", r);
}

/* Incoming immediates into @c; returns how many (0 when none). */
static unsigned int reap_rx(struct end *e, struct fi_cq_data_entry *c)
{
	ssize_t r = fi_cq_read(e->rxcq, c, BATCH), i;

	if (r == -FI_EAGAIN)
		return 0;
	if (r < 0)
		fail("receive completion", r);
	for (i = 0; i < r; i++) {
		if (!(c[i].flags & FI_REMOTE_CQ_DATA) || c[i].data >= cfg->qd)
			fail("unexpected completion", -FI_EOTHER);
		if (e->rx_cq_data)
			post_recv(e, (unsigned int)((struct fi_context2 *)c[i]
							    .op_context -
						    e->rx_ctx));
	}
	return (unsigned int)r;
}

static void server(int port_fd, int report_fd)
{
	struct {
		struct fi_eq_cm_entry cm;
		struct region r;
	} ev;
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_data_entry c[BATCH];
	struct fid_pep *pep;
	struct fid_eq *peq;
	struct end e = { 0 };
	unsigned long long ops = 0;
	char addr[64];
	size_t alen = sizeof(addr);
	unsigned int spin = 0, i, n;
	uint16_t port;
	double cpu0;
	int ret;

	open_domain(&e, getinfo("127.0.0.1", "0", FI_SOURCE));
	ret = fi_eq_open(e.fabric, &eq_attr, &peq, NULL);
	if (!ret)
		ret = fi_passive_ep(e.fabric, e.info, &pep, NULL);
	if (!ret)
		ret = fi_pep_bind(pep, &peq->fid, 0);
	if (!ret)
		ret = fi_listen(pep);
	if (!ret)
		ret = fi_getname(&pep->fid, addr, &alen);
	if (ret)
		fail("listen", ret);
	memcpy(&port, addr + 2, sizeof(port)); /* sin_port */
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		fail("pipe", 0);
	close(port_fd);
	if (wait_cm(&e, peq, &ev.cm, sizeof(ev)) != FI_CONNREQ || !ev.cm.info)
		fail("connection request", -FI_EOTHER);
	memcpy(&e.peer, &ev.r, sizeof(e.peer));
	open_ep(&e, ev.cm.info);
	ret = fi_accept(e.ep, &e.mine, sizeof(e.mine));
	if (ret)
		fail("fi_accept", ret);
	if (wait_cm(&e, e.eq, &ev.cm, sizeof(ev)) != FI_CONNECTED)
		fail("accept", -FI_EOTHER);

	cpu0 = cpu_s();
	for (;;) {
		n = reap_rx(&e, c);
		for (i = 0; i < n; i++)
			write_data(&e, (uint32_t)c[i].data,
				   cfg->write ? 0 : cfg->bs, !cfg->write);
		ops += n;
		reap_tx(&e);
		/* The client's shutdown ends the run. */
		if (!n && ++spin >= 256) {
			uint32_t event;

			spin = 0;
			if (fi_eq_read(e.eq, &event, &ev, sizeof(ev), 0) >= 0 &&
			    event == FI_SHUTDOWN)
				break;
		}
	}
	dprintf(report_fd, "%.6f %llu\n", cpu_s() - cpu0, ops);
	exit(0);
}

static unsigned long long client(uint16_t port, double *secs)
{
	struct {
		struct fi_eq_cm_entry cm;
		struct region r;
	} ev;
	struct fi_cq_data_entry c[BATCH];
	struct end e = { 0 };
	unsigned long long done = 0;
	unsigned int i, n, out = cfg->qd;
	char service[8];
	double t0, end_t, drain;
	int ret;

	snprintf(service, sizeof(service), "%u", port);
	open_domain(&e, getinfo("127.0.0.1", service, 0));
	open_ep(&e, e.info);
	ret = fi_connect(e.ep, e.info->dest_addr, &e.mine, sizeof(e.mine));
	if (ret)
		fail("fi_connect", ret);
	if (wait_cm(&e, e.eq, &ev.cm, sizeof(ev)) != FI_CONNECTED)
		fail("connect", -FI_EOTHER);
	memcpy(&e.peer, &ev.r, sizeof(e.peer));

	t0 = now_s();
	end_t = t0 + cfg->time_s;
	for (i = 0; i < cfg->qd; i++)
		write_data(&e, i, cfg->write ? cfg->bs : 0, cfg->write);
	for (;;) {
		n = reap_rx(&e, c);
		for (i = 0; i < n; i++)
			write_data(&e, (uint32_t)c[i].data,
				   cfg->write ? cfg->bs : 0, cfg->write);
		done += n;
		reap_tx(&e);
		/* The clock is read once per batch, not per request. */
		if (n && now_s() >= end_t)
			break;
	}
	*secs = now_s() - t0;
	/* Let what is in flight land before the shutdown. */
	drain = now_s() + 2;
	while ((out || e.tx_out) && now_s() < drain) {
		n = reap_rx(&e, c);
		out -= n < out ? n : out;
		reap_tx(&e);
	}
	fi_shutdown(e.ep, 0);
	return done;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ibtrs-ofi-ceiling [--provider NAME] [--rw write|read] "
		"[--bs BYTES] [--qd N] [--time S]\n"
		"One loopback libfabric FI_EP_MSG connection carrying "
		"ibtrs-shaped fi_writedata()\nrequests with no library, both "
		"ends polling: prints {\"iops\", \"gbps\", \"cpu\"}\nas one "
		"JSON line. The provider defaults to IBTRS_OFI_PROVIDER, else "
		"tcp.\n");
}

static int parse(int argc, char **argv, struct cfg *c)
{
	static const struct option opts[] = {
		{ "provider", required_argument, NULL, 'P' },
		{ "rw", required_argument, NULL, 'r' },
		{ "bs", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },
		{ "time", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("IBTRS_OFI_PROVIDER");
	char *end;
	long v;
	int o;

	*c = (struct cfg){ .write = true,
			   .bs = 4096,
			   .qd = 64,
			   .time_s = 5,
			   .prov = env && *env ? env : "tcp" };
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'P':
			if (!*optarg)
				goto bad;
			c->prov = optarg;
			break;
		case 'r':
			if (strcmp(optarg, "write") && strcmp(optarg, "read"))
				goto bad;
			c->write = !strcmp(optarg, "write");
			break;
		case 'b':
		case 'q':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > (o == 'b' ? MAX_BS : MAX_QD))
				goto bad;
			if (o == 'b')
				c->bs = (uint32_t)v;
			else
				c->qd = (uint32_t)v;
			break;
		case 't':
			c->time_s = strtod(optarg, &end);
			if (*end || !(c->time_s > 0 && c->time_s <= 3600))
				goto bad;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ibtrs-ofi-ceiling: unexpected argument %s\n",
			argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
bad:
	fprintf(stderr,
		"ibtrs-ofi-ceiling: bad value %s (--bs 1..%u, --qd 1..%u, "
		"--time 0..3600 s, --rw write|read, --provider NAME)\n",
		optarg, MAX_BS, MAX_QD);
	return -1;
}

int main(int argc, char **argv)
{
	int port_pipe[2], rep_pipe[2], status;
	unsigned long long ops, srv_ops = 0;
	double secs, cli_cpu, srv_cpu = 0;
	static struct cfg c;
	uint16_t port;
	pid_t pid;
	FILE *rep;

	if (parse(argc, argv, &c))
		return 2;
	cfg = &c;
	signal(SIGPIPE, SIG_IGN);
	if (pipe(port_pipe) || pipe(rep_pipe))
		fail("pipe", 0);
	pid = fork();
	if (pid < 0)
		fail("fork", 0);
	if (!pid) {
		close(port_pipe[0]);
		close(rep_pipe[0]);
		alarm((unsigned int)c.time_s + 60);
		server(port_pipe[1], rep_pipe[1]);
	}
	close(port_pipe[1]);
	close(rep_pipe[1]);
	if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port)) {
		fprintf(stderr,
			"ibtrs-ofi-ceiling: the server did not start\n");
		waitpid(pid, &status, 0);
		return 1;
	}
	close(port_pipe[0]);
	alarm((unsigned int)c.time_s + 60);
	cli_cpu = cpu_s();
	ops = client(ntohs(port), &secs);
	cli_cpu = cpu_s() - cli_cpu;
	rep = fdopen(rep_pipe[0], "r");
	if (!rep || fscanf(rep, "%lf %llu", &srv_cpu, &srv_ops) != 2)
		fprintf(stderr,
			"ibtrs-ofi-ceiling: no report from the server\n");
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "ibtrs-ofi-ceiling: server failed\n");
		return 1;
	}
	printf("{\"provider\": \"%s\", \"rw\": \"%s\", \"bs\": %u, "
	       "\"qd\": %u, \"busy_poll\": true, \"seconds\": %.3f, "
	       "\"ops\": %llu, \"iops\": %.0f, \"gbps\": %.3f, "
	       "\"cpu\": {\"client_us_per_req\": %.3f, "
	       "\"server_us_per_req\": %.3f}}\n",
	       c.prov, c.write ? "write" : "read", c.bs, c.qd, secs, ops,
	       (double)ops / secs, (double)ops * c.bs / secs / 1e9,
	       ops ? cli_cpu / (double)ops * 1e6 : 0.0,
	       srv_ops ? srv_cpu / (double)srv_ops * 1e6 : 0.0);
	return 0;
}
