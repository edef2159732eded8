// SPDX-License-Identifier: MIT
/*
 * plugin.c - the nbdkit plugin "ibtrs", serving an ibnbd export: every
 * NBD client (qemu, nbdcopy, nbdfuse, fio's nbd engine, the kernel's nbd)
 * reaches a block device exported by an ibnbd server over a multipath
 * ibtrs session.
 *
 *   nbdkit ibtrs path=ip:10.0.0.1 path=ip:10.0.1.1 port=1234 export=disk0
 *
 * The plugin holds ONE ibtrs session, one ibnbd client on it and one open
 * of the export, made in .after_fork (nbdkit forks into the background
 * after .get_ready; the library's threads must be started in the process
 * that serves). Every NBD connection shares them: nbdcopy and nbdfuse open
 * up to four connections, and the server allows one rw open per export,
 * so a device per connection would refuse all but the first.
 *
 * Requests map one to one onto ibnbd_submit_sync() calls on nbdkit's own
 * buffers, split at the device's limits. A path loss is invisible to the
 * NBD client: the transport fails requests over to another path, and
 * ibnbd holds new requests while no path is up, up to queue-timeout.
 *
 * Security of the ibtrs side has its own parameters, ibtrs-tls=,
 * ibtrs-tls-psk= and ibtrs-identity=: nbdkit's --tls and --tls-psk protect
 * the NBD side, between nbdkit and its clients, and stay nbdkit's.
 */
#define NBDKIT_API_VERSION 2

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <nbdkit-plugin.h>

#include <ibnbd.h>
#include <ibtrs.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* NBDKIT_REGISTER_PLUGIN defines it; declared for -Wmissing-prototypes. */
struct nbdkit_plugin *plugin_init(void);

/* The largest unaligned head or tail handled by read-modify-write. */
#define IBP_MAX_BLOCK 65536u

/* Configuration, from .config; read only after .config_complete. */
static struct {
	char *paths[IBTRS_MAX_PATHS];
	unsigned int path_cnt;
	uint16_t port;
	char *export_name;
	char *sessname;
	bool readonly;
	int policy;
	uint8_t reconnect_delay_sec;
	bool have_reconnect_delay;
	int16_t max_reconnect_attempts;
	bool have_max_reconnect_attempts;
	uint32_t hb_timeout_ms;
	uint32_t connect_timeout_ms;
	uint32_t failover_timeout_ms;
	uint32_t queue_timeout_ms;
	bool have_queue_timeout;
	uint32_t io_cons;
	const char *backend;
	int tls;
	char *tls_psk;
	char *identity;
} cfg = {
	.port = IBTRS_DEFAULT_PORT,
	.policy = -1,
	.tls = IBTRS_TLS_DEFAULT,
};

/*
 * The library's last error message while the session opens: it logs the
 * cause of a refused option (a key file, an identity) and answers only an
 * errno, and its log goes to nbdkit's debug output, which a user rarely
 * sees. ibp_after_fork() gives it with its own error.
 */
static struct {
	pthread_mutex_t lock;
	bool on;
	char msg[512];
} open_err = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * The one session, client and device every connection shares. @dev and
 * @geo change only in ibp_open() while no connection holds a handle
 * (@nhandles 0), under @lock; requests read them without the lock because
 * nbdkit runs no request of a connection before its .open has returned.
 */
static struct {
	struct ibtrs_clt *sess;
	struct ibnbd_clt *clt;
	struct ibnbd_dev *dev;
	struct ibnbd_geometry geo;
	enum ibnbd_access_mode mode;
	pthread_mutex_t lock;
	unsigned int nhandles;
	/* Serialises read-modify-write of partial blocks. */
	pthread_mutex_t rmw_lock;
} st = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.rmw_lock = PTHREAD_MUTEX_INITIALIZER,
};

/**
 * struct ibp_handle - one NBD connection
 * @readonly: the connection may not write (nbdkit -r, or the device is
 *            open read only)
 */
struct ibp_handle {
	bool readonly;
};

/**
 * ibp_log() - forward the library's log to nbdkit's debug output
 * @arg: unused
 * @level: the message's level
 * @msg: the message
 *
 * Path failures are logged at the error level by the transport, but they
 * are handled (the requests fail over): they are not nbdkit errors, which
 * would read as a failed request. `nbdkit -v` shows them all.
 */
static void ibp_log(void *arg, enum ibtrs_log_level level, const char *msg)
{
	static const char *const names[] = { "none", "error", "warning", "info",
					     "debug" };

	(void)arg;
	nbdkit_debug("ibtrs %s: %s",
		     (unsigned int)level < 5 ? names[level] : "?", msg);
	if (level != IBTRS_LOG_ERR)
		return;
	pthread_mutex_lock(&open_err.lock);
	if (open_err.on)
		snprintf(open_err.msg, sizeof(open_err.msg), "%s", msg);
	pthread_mutex_unlock(&open_err.lock);
}

/**
 * ibp_link_ev() - the session lost its last path or got one back
 * @priv: unused
 * @ev: the event
 */
static void ibp_link_ev(void *priv, enum ibtrs_clt_link_ev ev)
{
	(void)priv;
	if (ev == IBTRS_CLT_LINK_EV_DISCONNECTED)
		nbdkit_debug("ibtrs: no path connected; requests wait up to "
			     "queue-timeout for one");
	else
		nbdkit_debug("ibtrs: a path is connected again");
}

/**
 * ibp_load() - route the library's log through nbdkit
 *
 * The library is silent by default; IBTRS_LOG_LEVEL overrides the "info"
 * chosen here (shown only with nbdkit -v).
 */
static void ibp_load(void)
{
	ibtrs_set_log_fn(ibp_log, NULL);
	if (!getenv("IBTRS_LOG_LEVEL"))
		ibtrs_set_log_level(IBTRS_LOG_INFO);
}

/**
 * ibp_unload() - free the configuration
 */
static void ibp_unload(void)
{
	unsigned int i;

	for (i = 0; i < cfg.path_cnt; i++)
		free(cfg.paths[i]);
	free(cfg.export_name);
	free(cfg.sessname);
	free(cfg.tls_psk);
	free(cfg.identity);
}

/**
 * ibp_parse_ms() - parse a duration in milliseconds into @out
 * @key: the parameter, for the error
 * @value: its value
 * @min: smallest value allowed
 * @out: filled
 *
 * Return: 0, or -1 after nbdkit_error().
 */
static int ibp_parse_ms(const char *key, const char *value, uint32_t min,
			uint32_t *out)
{
	if (nbdkit_parse_uint32_t(key, value, out) == -1)
		return -1;
	if (*out < min) {
		nbdkit_error("%s=%s: at least %" PRIu32 " ms", key, value, min);
		return -1;
	}
	return 0;
}

/**
 * ibp_psk_file() - take ibtrs-tls-psk=FILE
 * @value: the file
 *
 * Made absolute now (nbdkit leaves the directory when it forks into the
 * background), and checked as far as a stat() can: the library reads the
 * keys at open, in .after_fork, where a mistake shows later.
 *
 * Return: 0, or -1 after nbdkit_error().
 */
static int ibp_psk_file(const char *value)
{
	struct stat sb;
	char *path;

	if (!value[0]) {
		nbdkit_error("ibtrs-tls-psk=: expected a key file");
		return -1;
	}
	path = nbdkit_realpath(value);
	if (!path)
		return -1;
	if (stat(path, &sb) == -1) {
		nbdkit_error("ibtrs-tls-psk=%s: %m", value);
		free(path);
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		nbdkit_error("ibtrs-tls-psk=%s: not a regular file", value);
		free(path);
		return -1;
	}
	if (sb.st_mode & (S_IRWXG | S_IRWXO)) {
		nbdkit_error("ibtrs-tls-psk=%s: readable by others than its "
			     "owner (mode %03o): chmod 600 it",
			     value, (unsigned int)(sb.st_mode & 0777));
		free(path);
		return -1;
	}
	free(cfg.tls_psk);
	cfg.tls_psk = path;
	return 0;
}

/**
 * ibp_config() - one key=value of the command line
 * @key: the key
 * @value: the value
 *
 * Return: 0, or -1 with a message naming the bad parameter.
 */
static int ibp_config(const char *key, const char *value)
{
	if (strcmp(key, "path") == 0) {
		struct sockaddr_storage dst;
		struct ibtrs_addr a = { .dst = &dst };
		struct sockaddr_storage src;
		int ret;

		if (cfg.path_cnt == IBTRS_MAX_PATHS) {
			nbdkit_error("path=%s: at most %d paths", value,
				     IBTRS_MAX_PATHS);
			return -1;
		}
		/* Checked now, for a clear error; parsed again at open. */
		a.src = &src;
		ret = ibtrs_addr_to_sockaddr(value, strlen(value), cfg.port,
					     &a);
		if (ret) {
			nbdkit_error("path=%s: %s (expected [ip:SRC,]ip:DST, "
				     "e.g. ip:10.0.0.1)",
				     value,
				     ret == -EHOSTUNREACH
					     ? "the host name does not resolve"
					     : "malformed address");
			return -1;
		}
		cfg.paths[cfg.path_cnt] = strdup(value);
		if (!cfg.paths[cfg.path_cnt]) {
			nbdkit_error("strdup: %m");
			return -1;
		}
		cfg.path_cnt++;
	} else if (strcmp(key, "port") == 0) {
		if (nbdkit_parse_uint16_t(key, value, &cfg.port) == -1)
			return -1;
		if (!cfg.port) {
			nbdkit_error("port=%s: must be 1..65535", value);
			return -1;
		}
	} else if (strcmp(key, "export") == 0) {
		size_t n = strlen(value);

		if (!n || n > IBNBD_NAME_MAX || strchr(value, '/')) {
			nbdkit_error("export=%s: an export name is 1..%d bytes "
				     "without '/'",
				     value, IBNBD_NAME_MAX);
			return -1;
		}
		free(cfg.export_name);
		cfg.export_name = strdup(value);
		if (!cfg.export_name) {
			nbdkit_error("strdup: %m");
			return -1;
		}
	} else if (strcmp(key, "sessname") == 0) {
		size_t n = strlen(value);

		if (!n || n >= NAME_MAX || strchr(value, '/')) {
			nbdkit_error("sessname=%s: a session name is 1..%d "
				     "bytes without '/'",
				     value, NAME_MAX - 1);
			return -1;
		}
		free(cfg.sessname);
		cfg.sessname = strdup(value);
		if (!cfg.sessname) {
			nbdkit_error("strdup: %m");
			return -1;
		}
	} else if (strcmp(key, "readonly") == 0) {
		int r = nbdkit_parse_bool(value);

		if (r == -1) {
			nbdkit_error("readonly=%s: expected true or false",
				     value);
			return -1;
		}
		cfg.readonly = r;
	} else if (strcmp(key, "policy") == 0) {
		int p;

		for (p = IBTRS_MP_ROUND_ROBIN; p <= IBTRS_MP_MIN_LATENCY; p++)
			if (strcmp(value, ibtrs_mp_policy_str(p)) == 0)
				break;
		if (p > IBTRS_MP_MIN_LATENCY) {
			nbdkit_error("policy=%s: expected round-robin, "
				     "min-inflight or min-latency",
				     value);
			return -1;
		}
		cfg.policy = p;
	} else if (strcmp(key, "reconnect-delay") == 0) {
		if (nbdkit_parse_uint8_t(key, value,
					 &cfg.reconnect_delay_sec) == -1)
			return -1;
		cfg.have_reconnect_delay = true;
	} else if (strcmp(key, "max-reconnect-attempts") == 0) {
		if (nbdkit_parse_int16_t(key, value,
					 &cfg.max_reconnect_attempts) == -1)
			return -1;
		if (cfg.max_reconnect_attempts < -1) {
			nbdkit_error("%s=%s: -1 (forever), 0 (never) or N", key,
				     value);
			return -1;
		}
		cfg.have_max_reconnect_attempts = true;
	} else if (strcmp(key, "hb-timeout") == 0) {
		if (ibp_parse_ms(key, value, 100, &cfg.hb_timeout_ms) == -1)
			return -1;
	} else if (strcmp(key, "connect-timeout") == 0) {
		if (ibp_parse_ms(key, value, 1, &cfg.connect_timeout_ms) == -1)
			return -1;
	} else if (strcmp(key, "failover-timeout") == 0) {
		if (ibp_parse_ms(key, value, 1, &cfg.failover_timeout_ms) == -1)
			return -1;
	} else if (strcmp(key, "queue-timeout") == 0) {
		if (ibp_parse_ms(key, value, 0, &cfg.queue_timeout_ms) == -1)
			return -1;
		cfg.have_queue_timeout = true;
	} else if (strcmp(key, "io-cons") == 0) {
		if (nbdkit_parse_uint32_t(key, value, &cfg.io_cons) == -1)
			return -1;
		if (cfg.io_cons < 1 || cfg.io_cons > IBTRS_MAX_IO_CONS) {
			nbdkit_error("io-cons=%s: must be 1..%d", value,
				     IBTRS_MAX_IO_CONS);
			return -1;
		}
	} else if (strcmp(key, "ibtrs-tls") == 0) {
		if (strcmp(value, "off") == 0) {
			cfg.tls = IBTRS_TLS_OFF;
		} else if (strcmp(value, "on") == 0) {
			cfg.tls = IBTRS_TLS_ON;
		} else if (strcmp(value, "require") == 0) {
			cfg.tls = IBTRS_TLS_REQUIRE;
		} else {
			nbdkit_error(
				"ibtrs-tls=%s: expected off, on or require",
				value);
			return -1;
		}
	} else if (strcmp(key, "ibtrs-tls-psk") == 0) {
		if (ibp_psk_file(value) == -1)
			return -1;
	} else if (strcmp(key, "ibtrs-identity") == 0) {
		if (!value[0] || strlen(value) > 128 ||
		    strpbrk(value, ": \t")) {
			nbdkit_error("ibtrs-identity=%s: expected the identity "
				     "of a key (1..128 bytes, no ':' or "
				     "spaces)",
				     value);
			return -1;
		}
		free(cfg.identity);
		cfg.identity = strdup(value);
		if (!cfg.identity) {
			nbdkit_error("strdup: %m");
			return -1;
		}
	} else if (strcmp(key, "transport") == 0) {
		if (strcmp(value, "tcp") == 0) {
			cfg.backend = "tcp";
		} else if (strcmp(value, "ofi") == 0) {
			cfg.backend = "ofi";
		} else {
			nbdkit_error("transport=%s: expected tcp or ofi",
				     value);
			return -1;
		}
	} else {
		nbdkit_error("unknown parameter '%s' (see nbdkit ibtrs --help)",
			     key);
		return -1;
	}
	return 0;
}

/**
 * ibp_config_complete() - check that the required parameters were given
 *
 * Return: 0, or -1 with a message.
 */
static int ibp_config_complete(void)
{
	if (!cfg.path_cnt) {
		nbdkit_error("no path= given: name the server, e.g. "
			     "path=ip:10.0.0.1 (repeat it for each path)");
		return -1;
	}
	if (!cfg.export_name) {
		nbdkit_error("no export= given: name the server's export");
		return -1;
	}
	/* The environment may give the file (IBTRS_TLS_PSK), as to any
	 * client of the library. */
	if (!cfg.tls_psk && !getenv("IBTRS_TLS_PSK")) {
		if (cfg.tls == IBTRS_TLS_ON || cfg.tls == IBTRS_TLS_REQUIRE) {
			nbdkit_error("ibtrs-tls=%s needs a key file: "
				     "ibtrs-tls-psk=FILE",
				     cfg.tls == IBTRS_TLS_ON ? "on"
							     : "require");
			return -1;
		}
		if (cfg.identity) {
			nbdkit_error("ibtrs-identity=%s needs a key file: "
				     "ibtrs-tls-psk=FILE",
				     cfg.identity);
			return -1;
		}
	}
	return 0;
}

#define ibp_config_help                                                           \
	"path=[ip:SRC,]ip:DST     (required, repeatable) a path to the server\n"  \
	"export=NAME              (required) the server's export\n"               \
	"port=PORT                server port (default 1234)\n"                   \
	"sessname=NAME            session name (default nbdkit-HOST-PID)\n"       \
	"readonly=BOOL            open the export read only (also nbdkit -r)\n"   \
	"policy=POLICY            round-robin, min-inflight (default) or\n"       \
	"                         min-latency\n"                                  \
	"reconnect-delay=SEC      between reconnect tries (default 1)\n"          \
	"max-reconnect-attempts=N -1 forever (default), 0 never\n"                \
	"hb-timeout=MS            a silent path is dead after it (default "       \
	"1000)\n"                                                                 \
	"connect-timeout=MS       to connect one path (default 2000)\n"           \
	"failover-timeout=MS      a request of a dead path waits this long\n"     \
	"                         for another (default 30000)\n"                  \
	"queue-timeout=MS         a request waits this long while no path is\n"   \
	"                         up, then fails with EIO (default 30000)\n"      \
	"io-cons=N                I/O connections per path (default 1)\n"         \
	"transport=tcp|ofi        ibtrs backend (default tcp)\n"                  \
	"ibtrs-tls=MODE           TLS 1.3 with a pre-shared key to the ibtrs\n"   \
	"                         server: off, on or require (default: the\n"     \
	"                         IBTRS_TLS environment variable, else off)\n"    \
	"ibtrs-tls-psk=FILE       psktool key file (mode 0600) whose key the\n"   \
	"                         session proves to the ibtrs server (nbdkit's\n" \
	"                         own --tls-psk protects the NBD side)\n"         \
	"ibtrs-identity=NAME      the key of FILE to use (default: the first)"

/**
 * ibp_dev_open_locked() - open the export in @mode into st.dev, st.geo
 * @mode: IBNBD_ACCESS_RO or IBNBD_ACCESS_RW
 *
 * Context: st.lock held, or before any connection.
 * Return: 0, or -1 after nbdkit_error().
 */
static int ibp_dev_open_locked(enum ibnbd_access_mode mode)
{
	struct ibnbd_geometry geo;
	struct ibnbd_dev *dev;

	dev = ibnbd_dev_open(st.clt, cfg.export_name, mode, &geo);
	if (!dev) {
		int err = errno;

		nbdkit_error(
			"export %s: cannot open it %s: %s%s", cfg.export_name,
			mode == IBNBD_ACCESS_RO ? "read only" : "read-write",
			strerror(err),
			err == EBUSY	? " (another client has it open "
					  "read-write)"
			: err == EROFS	? " (the export is read only: give "
					  "readonly=true or -r)"
			: err == ENOENT ? " (no such export on the server)"
			: err == EACCES
				? " (access denied: the server's allow list "
				  "does not let this client's identity open it)"
				: "");
		return -1;
	}
	if (geo.logical_block_size < 512 ||
	    geo.logical_block_size > IBP_MAX_BLOCK ||
	    (geo.logical_block_size & (geo.logical_block_size - 1)) ||
	    geo.max_io_size < geo.logical_block_size) {
		nbdkit_error(
			"export %s: unusable geometry: logical block %" PRIu32
			", max I/O %" PRIu32,
			cfg.export_name, geo.logical_block_size,
			geo.max_io_size);
		ibnbd_dev_close(dev);
		return -1;
	}
	st.dev = dev;
	st.geo = geo;
	st.mode = mode;
	nbdkit_debug("export %s: open %s, device id %" PRIu32 ", %" PRIu64
		     " bytes, blocks %" PRIu32 "/%" PRIu32 ", max io %" PRIu32
		     ", max discard %" PRIu32 ", max write zeroes %" PRIu32
		     ", flags 0x%" PRIx32,
		     cfg.export_name, mode == IBNBD_ACCESS_RO ? "ro" : "rw",
		     geo.device_id, geo.size, geo.logical_block_size,
		     geo.physical_block_size, geo.max_io_size, geo.max_discard,
		     geo.max_write_zeroes, geo.flags);
	return 0;
}

/**
 * ibp_after_fork() - open the session, attach ibnbd, open the export
 *
 * Runs in the process that serves (after nbdkit daemonised), so the
 * library's threads live there. The device is opened read-write unless
 * readonly=true: nbdkit tells a plugin of -r only in .open, where
 * ibp_open() reopens it read only (see there).
 *
 * Return: 0, or -1 after nbdkit_error(): nbdkit then exits.
 */
static int ibp_after_fork(void)
{
	struct sockaddr_storage src[IBTRS_MAX_PATHS], dst[IBTRS_MAX_PATHS];
	struct ibtrs_addr addrs[IBTRS_MAX_PATHS];
	struct ibnbd_clt_opts copts;
	struct ibtrs_clt_opts o;
	char host[64], name[NAME_MAX];
	unsigned int i;
	int ret, err;

	for (i = 0; i < cfg.path_cnt; i++) {
		addrs[i].src = &src[i];
		addrs[i].dst = &dst[i];
		ret = ibtrs_addr_to_sockaddr(cfg.paths[i], strlen(cfg.paths[i]),
					     cfg.port, &addrs[i]);
		if (ret) {
			nbdkit_error("path=%s: %s", cfg.paths[i],
				     strerror(-ret));
			return -1;
		}
	}
	if (cfg.sessname) {
		snprintf(name, sizeof(name), "%s", cfg.sessname);
	} else {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		for (i = 0; host[i]; i++)
			if (host[i] == '/')
				host[i] = '_';
		snprintf(name, sizeof(name), "nbdkit-%s-%ld", host,
			 (long)getpid());
	}

	ibtrs_clt_opts_init(&o, sizeof(o));
	o.link_ev = ibp_link_ev;
	o.sessname = name;
	o.paths = addrs;
	o.path_cnt = cfg.path_cnt;
	o.port = cfg.port;
	if (cfg.have_reconnect_delay)
		o.reconnect_delay_sec = cfg.reconnect_delay_sec;
	if (cfg.have_max_reconnect_attempts)
		o.max_reconnect_attempts = cfg.max_reconnect_attempts;
	if (cfg.connect_timeout_ms)
		o.connect_timeout_ms = cfg.connect_timeout_ms;
	if (cfg.io_cons)
		o.io_cons = cfg.io_cons;
	if (cfg.backend)
		o.backend = cfg.backend;
	if (cfg.policy >= 0)
		o.policy = cfg.policy;
	if (cfg.hb_timeout_ms)
		o.hb_timeout_ms = cfg.hb_timeout_ms;
	if (cfg.failover_timeout_ms)
		o.failover_timeout_ms = cfg.failover_timeout_ms;
	o.tls = cfg.tls;
	o.tls_psk_file = cfg.tls_psk;
	o.identity = cfg.identity;
	pthread_mutex_lock(&open_err.lock);
	open_err.on = true;
	open_err.msg[0] = '\0';
	pthread_mutex_unlock(&open_err.lock);
	st.sess = ibtrs_clt_open_opts(&o);
	err = errno;
	pthread_mutex_lock(&open_err.lock);
	open_err.on = false;
	pthread_mutex_unlock(&open_err.lock);
	if (!st.sess) {
		nbdkit_error("ibtrs session %s to %s%s (port %u): %s%s%s%s",
			     name, cfg.paths[0],
			     cfg.path_cnt > 1 ? ", ..." : "", cfg.port,
			     strerror(err), open_err.msg[0] ? " (" : "",
			     open_err.msg, open_err.msg[0] ? ")" : "");
		return -1;
	}

	ibnbd_clt_opts_init(&copts, sizeof(copts));
	if (cfg.have_queue_timeout)
		copts.queue_timeout_ms = cfg.queue_timeout_ms;
	st.clt = ibnbd_clt_attach(st.sess, &copts);
	if (!st.clt) {
		nbdkit_error("ibnbd on session %s: %m%s", name,
			     errno == EPROTONOSUPPORT
				     ? " (the server speaks another ibnbd "
				       "version)"
				     : "");
		goto close_sess;
	}
	if (ibp_dev_open_locked(cfg.readonly ? IBNBD_ACCESS_RO
					     : IBNBD_ACCESS_RW))
		goto detach;
	nbdkit_debug("session %s: %u path(s), export %s ready", name,
		     cfg.path_cnt, cfg.export_name);
	return 0;

detach:
	ibnbd_clt_detach(st.clt);
	st.clt = NULL;
close_sess:
	ibtrs_clt_close(st.sess);
	st.sess = NULL;
	return -1;
}

/**
 * ibp_cleanup() - close the device, detach, close the session
 *
 * nbdkit calls it after every connection closed.
 */
static void ibp_cleanup(void)
{
	int ret;

	if (st.dev) {
		ret = ibnbd_dev_close(st.dev);
		if (ret)
			nbdkit_debug("export %s: close: %s", cfg.export_name,
				     strerror(-ret));
		st.dev = NULL;
	}
	if (st.clt) {
		ibnbd_clt_detach(st.clt);
		st.clt = NULL;
	}
	if (st.sess) {
		ibtrs_clt_close(st.sess);
		st.sess = NULL;
	}
}

/**
 * ibp_open() - a new NBD connection
 * @readonly: nbdkit -r (or a filter) makes the connection read only
 *
 * All connections share the one device. Under -r nbdkit passes @readonly
 * to every connection, and the plugin then gives the export's rw slot
 * back: when no connection holds the device, it is reopened read only
 * (the rw open of .after_fork checked at start-up that the export is
 * there). A later rw connection, once the read-only ones are gone, gets
 * the rw open back, or is served read only if the server refuses.
 *
 * Return: the handle, or NULL after nbdkit_error().
 */
static void *ibp_open(int readonly)
{
	enum ibnbd_access_mode mode, want;
	struct ibnbd_dev *old;
	struct ibp_handle *h;

	h = malloc(sizeof(*h));
	if (!h) {
		nbdkit_error("malloc: %m");
		return NULL;
	}
	want = readonly || cfg.readonly ? IBNBD_ACCESS_RO : IBNBD_ACCESS_RW;
	pthread_mutex_lock(&st.lock);
	if (!st.nhandles && (st.mode != want || !st.dev)) {
		/*
		 * The new open first (ro opens coexist with the rw one), then
		 * the old one closed: a refused reopen keeps the old device.
		 */
		old = st.dev;
		mode = st.mode;
		if (ibp_dev_open_locked(want) == 0) {
			if (old)
				ibnbd_dev_close(old);
		} else if (old) {
			st.dev = old;
			st.mode = mode;
			nbdkit_debug("export %s: keeping the %s open",
				     cfg.export_name,
				     mode == IBNBD_ACCESS_RO ? "ro" : "rw");
		} else {
			pthread_mutex_unlock(&st.lock);
			free(h);
			return NULL;
		}
	}
	st.nhandles++;
	h->readonly = readonly || st.mode == IBNBD_ACCESS_RO ||
		      (st.geo.flags & IBNBD_DEV_READONLY);
	pthread_mutex_unlock(&st.lock);
	return h;
}

/**
 * ibp_close() - an NBD connection ended
 * @handle: its handle
 */
static void ibp_close(void *handle)
{
	pthread_mutex_lock(&st.lock);
	st.nhandles--;
	pthread_mutex_unlock(&st.lock);
	free(handle);
}

static int64_t ibp_get_size(void *handle)
{
	(void)handle;
	return (int64_t)st.geo.size;
}

/**
 * ibp_block_size() - advertise the device's block sizes
 * @handle: unused
 * @minimum: the logical block: smaller writes need a read-modify-write
 * @preferred: the physical block
 * @maximum: max_io_size, the largest READ or WRITE of one request
 *
 * Return: 0.
 */
static int ibp_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
			  uint32_t *maximum)
{
	uint32_t lbs = st.geo.logical_block_size;
	uint32_t pbs = st.geo.physical_block_size;
	uint32_t max = st.geo.max_io_size / lbs * lbs;

	(void)handle;
	/* nbdkit wants powers of two, min <= preferred <= max. */
	if (pbs < lbs || (pbs & (pbs - 1)) || pbs > 32u * 1024 * 1024)
		pbs = lbs;
	if (pbs < 512)
		pbs = 512;
	if (pbs > max)
		pbs = lbs > 512 ? lbs : 512;
	*minimum = lbs;
	*preferred = pbs;
	*maximum = max;
	return 0;
}

static int ibp_can_write(void *handle)
{
	struct ibp_handle *h = handle;

	return !h->readonly;
}

static int ibp_can_flush(void *handle)
{
	(void)handle;
	return 1;
}

static int ibp_is_rotational(void *handle)
{
	(void)handle;
	return 0;
}

static int ibp_can_fua(void *handle)
{
	(void)handle;
	return st.geo.flags & IBNBD_DEV_FUA ? NBDKIT_FUA_NATIVE
					    : NBDKIT_FUA_EMULATE;
}

static int ibp_can_trim(void *handle)
{
	struct ibp_handle *h = handle;

	return !h->readonly && (st.geo.flags & IBNBD_DEV_DISCARD) &&
	       st.geo.max_discard >= st.geo.logical_block_size;
}

/**
 * ibp_has_write_zeroes() - whether WRITE_ZEROES can be sent to the device
 *
 * Return: true when the device does it, in pieces of at least one block.
 */
static bool ibp_has_write_zeroes(void)
{
	return (st.geo.flags & IBNBD_DEV_WRITE_ZEROES) &&
	       st.geo.max_write_zeroes >= st.geo.logical_block_size;
}

static int ibp_can_zero(void *handle)
{
	(void)handle;
	/*
	 * Zeroing is advertised either way: without WRITE_ZEROES nbdkit
	 * writes a buffer of zeros through .pwrite instead of calling .zero.
	 */
	return ibp_has_write_zeroes();
}

static int ibp_can_fast_zero(void *handle)
{
	(void)handle;
	/* Nothing tells a cheap WRITE_ZEROES from a slow one in advance. */
	return 0;
}

/**
 * ibp_can_multi_conn() - whether clients may spread I/O over connections
 * @handle: unused
 *
 * Correct because every connection shares one session and one device
 * open, and the server's FLUSH is a file-wide fdatasync: a flush on any
 * connection makes durable every write completed before it on every
 * connection, which is what NBD_FLAG_CAN_MULTI_CONN promises.
 *
 * Return: 1.
 */
static int ibp_can_multi_conn(void *handle)
{
	(void)handle;
	return 1;
}

static int ibp_can_cache(void *handle)
{
	(void)handle;
	/* The server reads from its page cache; nothing to prefetch here. */
	return NBDKIT_CACHE_NONE;
}

/**
 * ibp_err() - report a failed request to nbdkit
 * @what: the operation, for the log
 * @offset: its offset
 * @len: its length
 * @err: the negative errno ibnbd gave
 *
 * Return: -1, nbdkit's failure value.
 */
static int ibp_err(const char *what, uint64_t offset, uint64_t len, int err)
{
	int e = -err;

	switch (e) {
	case ENOTCONN:
		nbdkit_error("%s at %" PRIu64 " (%" PRIu64 " bytes): no path "
			     "to the server came up within queue-timeout",
			     what, offset, len);
		e = EIO;
		break;
	case ECONNABORTED:
		nbdkit_error("%s at %" PRIu64 " (%" PRIu64 " bytes): request "
			     "lost: no path came back within "
			     "failover-timeout, or the session is closing",
			     what, offset, len);
		e = EIO;
		break;
	case ESHUTDOWN:
		nbdkit_error("%s: the device is closing", what);
		break;
	case EOPNOTSUPP:
		/* nbdkit falls back (zero: writes zeros) without an error. */
		nbdkit_debug("%s at %" PRIu64 ": not supported by the device",
			     what, offset);
		break;
	default:
		if (e <= 0 || e > 4095)
			e = EIO;
		nbdkit_error("%s at %" PRIu64 " (%" PRIu64 " bytes): %s", what,
			     offset, len, strerror(e));
		break;
	}
	nbdkit_set_error(e);
	return -1;
}

/**
 * ibp_rw() - READ or WRITE of whole blocks, split at max_io_size
 * @op: IBNBD_OP_READ or IBNBD_OP_WRITE
 * @flags: IBNBD_F_*
 * @buf: the data
 * @count: bytes, a multiple of the logical block
 * @offset: a multiple of the logical block
 *
 * Return: 0, or the negative errno of the first failing piece.
 */
static int ibp_rw(enum ibnbd_op op, uint32_t flags, char *buf, uint64_t count,
		  uint64_t offset)
{
	uint32_t max = st.geo.max_io_size / st.geo.logical_block_size *
		       st.geo.logical_block_size;
	struct iovec iov;
	uint32_t n;
	int ret;

	while (count) {
		n = count > max ? max : (uint32_t)count;
		iov.iov_base = buf;
		iov.iov_len = n;
		ret = ibnbd_submit_sync(st.dev, op, flags, offset, n, &iov, 1);
		if (ret)
			return ret;
		buf += n;
		offset += n;
		count -= n;
	}
	return 0;
}

/**
 * ibp_rmw() - write part of one logical block
 * @blk: the block's offset
 * @off: the first byte to change, within the block
 * @len: bytes to change
 * @src: the new bytes, or NULL for zeros
 * @flags: IBNBD_F_* of the write
 *
 * Under rmw_lock, so that two partial writes of one block do not undo
 * each other (whole-block requests overlapping them are unordered in NBD
 * anyway).
 *
 * Return: 0, or a negative errno.
 */
static int ibp_rmw(uint64_t blk, uint32_t off, uint32_t len, const void *src,
		   uint32_t flags)
{
	static char buf[IBP_MAX_BLOCK] __attribute__((aligned(4096)));
	uint32_t lbs = st.geo.logical_block_size;
	int ret;

	pthread_mutex_lock(&st.rmw_lock);
	ret = ibp_rw(IBNBD_OP_READ, 0, buf, lbs, blk);
	if (!ret) {
		if (src)
			memcpy(buf + off, src, len);
		else
			memset(buf + off, 0, len);
		ret = ibp_rw(IBNBD_OP_WRITE, flags, buf, lbs, blk);
	}
	pthread_mutex_unlock(&st.rmw_lock);
	return ret;
}

/**
 * ibp_write_range() - write or zero any byte range
 * @src: the data, or NULL to write zeros (with WRITE_ZEROES for the whole
 *       blocks, which the caller chose)
 * @count: bytes
 * @offset: first byte
 * @flags: IBNBD_F_* of the writes
 * @whole: writes the whole blocks of [@p, @p + @n): data or zeros
 *
 * The unaligned head and tail are read-modify-written block by block.
 *
 * Return: 0, or a negative errno.
 */
static int ibp_write_range(const char *src, uint64_t count, uint64_t offset,
			   uint32_t flags,
			   int (*whole)(const char *p, uint64_t n, uint64_t off,
					uint32_t flags))
{
	uint32_t lbs = st.geo.logical_block_size;
	uint64_t head = offset % lbs, n;
	int ret;

	if (head) {
		n = lbs - head < count ? lbs - head : count;
		ret = ibp_rmw(offset - head, (uint32_t)head, (uint32_t)n, src,
			      flags);
		if (ret)
			return ret;
		offset += n;
		count -= n;
		if (src)
			src += n;
	}
	n = count / lbs * lbs;
	if (n) {
		ret = whole(src, n, offset, flags);
		if (ret)
			return ret;
		offset += n;
		count -= n;
		if (src)
			src += n;
	}
	if (count)
		return ibp_rmw(offset, 0, (uint32_t)count, src, flags);
	return 0;
}

/**
 * ibp_whole_write() - WRITE of whole blocks (ibp_write_range()'s @whole)
 * @p: the data
 * @n: bytes, a multiple of the logical block
 * @off: a multiple of the logical block
 * @flags: IBNBD_F_*
 *
 * Return: 0, or a negative errno.
 */
static int ibp_whole_write(const char *p, uint64_t n, uint64_t off,
			   uint32_t flags)
{
	return ibp_rw(IBNBD_OP_WRITE, flags, (char *)p, n, off);
}

/**
 * ibp_pread() - NBD_CMD_READ
 * @handle: unused
 * @buf: where the data goes
 * @count: bytes
 * @offset: first byte
 * @flags: none defined for reads
 *
 * Whole blocks go straight into @buf; an unaligned head or tail (a client
 * ignoring the minimum block size) goes through a block buffer.
 *
 * Return: 0, or -1 with nbdkit's error set.
 */
static int ibp_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
		     uint32_t flags)
{
	uint32_t lbs = st.geo.logical_block_size;
	uint64_t head = offset % lbs, n;
	uint64_t o = offset, c = count;
	char *p = buf, *blk = NULL;
	int ret = 0;

	(void)handle;
	(void)flags;
	if (head || (offset + count) % lbs) {
		blk = malloc(lbs);
		if (!blk)
			return ibp_err("read", offset, count, -ENOMEM);
	}
	if (head) {
		n = lbs - head < c ? lbs - head : c;
		ret = ibp_rw(IBNBD_OP_READ, 0, blk, lbs, o - head);
		if (ret)
			goto out;
		memcpy(p, blk + head, n);
		p += n;
		o += n;
		c -= n;
	}
	n = c / lbs * lbs;
	if (n) {
		ret = ibp_rw(IBNBD_OP_READ, 0, p, n, o);
		if (ret)
			goto out;
		p += n;
		o += n;
		c -= n;
	}
	if (c) {
		ret = ibp_rw(IBNBD_OP_READ, 0, blk, lbs, o);
		if (!ret)
			memcpy(p, blk, c);
	}
out:
	free(blk);
	return ret ? ibp_err("read", offset, count, ret) : 0;
}

/**
 * ibp_pwrite() - NBD_CMD_WRITE
 * @handle: unused
 * @buf: the data
 * @count: bytes
 * @offset: first byte
 * @flags: NBDKIT_FLAG_FUA
 *
 * Return: 0, or -1 with nbdkit's error set.
 */
static int ibp_pwrite(void *handle, const void *buf, uint32_t count,
		      uint64_t offset, uint32_t flags)
{
	uint32_t f = flags & NBDKIT_FLAG_FUA ? IBNBD_F_FUA : 0;
	int ret;

	(void)handle;
	ret = ibp_write_range(buf, count, offset, f, ibp_whole_write);
	return ret ? ibp_err("write", offset, count, ret) : 0;
}

/**
 * ibp_flush() - NBD_CMD_FLUSH: every completed write becomes durable
 * @handle: unused
 * @flags: none defined
 *
 * Return: 0, or -1 with nbdkit's error set.
 */
static int ibp_flush(void *handle, uint32_t flags)
{
	int ret;

	(void)handle;
	(void)flags;
	ret = ibnbd_submit_sync(st.dev, IBNBD_OP_FLUSH, 0, 0, 0, NULL, 0);
	return ret ? ibp_err("flush", 0, 0, ret) : 0;
}

/**
 * ibp_ranged() - DISCARD or WRITE_ZEROES of whole blocks, split at @max
 * @op: the operation
 * @flags: IBNBD_F_*
 * @count: bytes, a multiple of the logical block
 * @offset: a multiple of the logical block
 * @max: the device's limit for @op
 *
 * Return: 0, or the negative errno of the first failing piece.
 */
static int ibp_ranged(enum ibnbd_op op, uint32_t flags, uint64_t count,
		      uint64_t offset, uint32_t max)
{
	uint32_t lbs = st.geo.logical_block_size, n;
	int ret;

	max = max / lbs * lbs;
	while (count) {
		n = count > max ? max : (uint32_t)count;
		ret = ibnbd_submit_sync(st.dev, op, flags, offset, n, NULL, 0);
		if (ret)
			return ret;
		offset += n;
		count -= n;
	}
	return 0;
}

/**
 * ibp_trim() - NBD_CMD_TRIM: the range may be deallocated
 * @handle: unused
 * @count: bytes
 * @offset: first byte
 * @flags: NBDKIT_FLAG_FUA
 *
 * A trim is advisory: the partial blocks at either end are left alone.
 *
 * Return: 0, or -1 with nbdkit's error set.
 */
static int ibp_trim(void *handle, uint32_t count, uint64_t offset,
		    uint32_t flags)
{
	uint32_t lbs = st.geo.logical_block_size;
	uint64_t start = (offset + lbs - 1) / lbs * lbs;
	uint64_t end = (offset + count) / lbs * lbs;
	uint32_t f = flags & NBDKIT_FLAG_FUA ? IBNBD_F_FUA : 0;
	int ret;

	(void)handle;
	if (end <= start)
		return 0;
	ret = ibp_ranged(IBNBD_OP_DISCARD, f, end - start, start,
			 st.geo.max_discard);
	return ret ? ibp_err("trim", offset, count, ret) : 0;
}

/**
 * ibp_whole_zero() - WRITE_ZEROES of whole blocks (ibp_write_range()'s
 * @whole for zeros)
 * @p: unused (NULL)
 * @n: bytes, a multiple of the logical block
 * @off: a multiple of the logical block
 * @flags: IBNBD_F_*
 *
 * Return: 0, or a negative errno.
 */
static int ibp_whole_zero(const char *p, uint64_t n, uint64_t off,
			  uint32_t flags)
{
	(void)p;
	return ibp_ranged(IBNBD_OP_WRITE_ZEROES, flags, n, off,
			  st.geo.max_write_zeroes);
}

/**
 * ibp_zero() - NBD_CMD_WRITE_ZEROES
 * @handle: unused
 * @count: bytes
 * @offset: first byte
 * @flags: NBDKIT_FLAG_MAY_TRIM (else the range stays allocated:
 *         IBNBD_F_NOUNMAP), NBDKIT_FLAG_FUA, NBDKIT_FLAG_FAST_ZERO
 *
 * Whole blocks with WRITE_ZEROES, split at max_write_zeroes; partial
 * blocks at either end are read, zeroed in part and written back.
 *
 * Return: 0, or -1 with nbdkit's error set (ENOTSUP makes nbdkit write
 * zeros itself).
 */
static int ibp_zero(void *handle, uint32_t count, uint64_t offset,
		    uint32_t flags)
{
	uint32_t f = 0;
	int ret;

	(void)handle;
	if (flags & NBDKIT_FLAG_FAST_ZERO) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	if (!ibp_has_write_zeroes()) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	if (flags & NBDKIT_FLAG_FUA)
		f |= IBNBD_F_FUA;
	if (!(flags & NBDKIT_FLAG_MAY_TRIM))
		f |= IBNBD_F_NOUNMAP;
	ret = ibp_write_range(NULL, count, offset, f, ibp_whole_zero);
	return ret ? ibp_err("zero", offset, count, ret) : 0;
}

static struct nbdkit_plugin plugin = {
	.name = "ibtrs",
	.longname = "nbdkit ibnbd plugin over an ibtrs session",
	.version = "0.1.0",
	.description = "Serve an export of an ibnbd server over NBD",
	.load = ibp_load,
	.unload = ibp_unload,
	.config = ibp_config,
	.config_complete = ibp_config_complete,
	.config_help = ibp_config_help,
	.magic_config_key = "path",
	.after_fork = ibp_after_fork,
	.cleanup = ibp_cleanup,
	.open = ibp_open,
	.close = ibp_close,
	.get_size = ibp_get_size,
	.block_size = ibp_block_size,
	.can_write = ibp_can_write,
	.can_flush = ibp_can_flush,
	.is_rotational = ibp_is_rotational,
	.can_fua = ibp_can_fua,
	.can_trim = ibp_can_trim,
	.can_zero = ibp_can_zero,
	.can_fast_zero = ibp_can_fast_zero,
	.can_multi_conn = ibp_can_multi_conn,
	.can_cache = ibp_can_cache,
	.pread = ibp_pread,
	.pwrite = ibp_pwrite,
	.flush = ibp_flush,
	.trim = ibp_trim,
	.zero = ibp_zero,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
