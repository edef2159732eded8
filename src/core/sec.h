/* SPDX-License-Identifier: MIT */
/*
 * sec.h - the security settings of a server context or a client session:
 * the TLS mode and the pre-shared keys, resolved once at open from the
 * options and the environment (IBTRS_TLS, IBTRS_TLS_PSK, IBTRS_IDENTITY).
 * The handshake (auth) and the tcp backend's TLS read them; nothing
 * changes them after open.
 */
#ifndef IBTRS_CORE_SEC_H
#define IBTRS_CORE_SEC_H

#include <stdbool.h>

#include "keyring.h"

/**
 * struct ibtrs_sec - resolved security settings
 * @tls: IBTRS_TLS_OFF, IBTRS_TLS_ON or IBTRS_TLS_REQUIRE (never DEFAULT)
 * @keys: the key file's keys, NULL without a key file
 * @psk: client only: the key it proves (of @keys), NULL without keys
 * @psk_file: the key file's name for messages, "" without one
 */
struct ibtrs_sec {
	int tls;
	struct ibtrs_keyring *keys;
	const struct ibtrs_psk *psk;
	char psk_file[256];
};

/*
 * Resolve the settings into @sec: @tls (enum ibtrs_tls_mode), @psk_file
 * and, for a client, @identity, each NULL/DEFAULT for its environment
 * variable. Refused with a logged cause naming @who: an unknown mode; TLS
 * without a key file; TLS in a library built without GnuTLS
 * (-EOPNOTSUPP); an @identity without a key file or not in it (-ENOENT);
 * a key file that cannot be read.
 * Return: 0, or a negative errno.
 */
int ibtrs_sec_init(struct ibtrs_sec *sec, int tls, const char *psk_file,
		   const char *identity, bool client, const char *who);

/* Wipe and free the keys of @sec. */
void ibtrs_sec_fini(struct ibtrs_sec *sec);

/* "off", "on", "require" or "?". */
const char *ibtrs_tls_mode_str(int tls);

/* Parse "off", "on" or "require" (as IBTRS_TLS and --tls take them);
 * -EINVAL for anything else. */
int ibtrs_tls_mode_parse(const char *s);

#endif /* IBTRS_CORE_SEC_H */
