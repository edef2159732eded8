// SPDX-License-Identifier: MIT
/*
 * sec.c - resolving the security settings (sec.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibtrs.h"
#include "log.h"
#include "sec.h"

const char *ibtrs_tls_mode_str(int tls)
{
	switch (tls) {
	case IBTRS_TLS_OFF:
		return "off";
	case IBTRS_TLS_ON:
		return "on";
	case IBTRS_TLS_REQUIRE:
		return "require";
	}
	return "?";
}

int ibtrs_tls_mode_parse(const char *s)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "off"))
		return IBTRS_TLS_OFF;
	if (!strcmp(s, "on"))
		return IBTRS_TLS_ON;
	if (!strcmp(s, "require"))
		return IBTRS_TLS_REQUIRE;
	return -EINVAL;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int ibtrs_sec_init(struct ibtrs_sec *sec, int tls, const char *psk_file,
		   const char *identity, bool client, const char *who)
{
	char err[512];
	int ret;

	memset(sec, 0, sizeof(*sec));
	if (tls == IBTRS_TLS_DEFAULT) {
		const char *e = env("IBTRS_TLS");

		tls = e ? ibtrs_tls_mode_parse(e) : IBTRS_TLS_OFF;
		if (tls < 0) {
			ibtrs_log(IBTRS_LOG_ERR,
				  "%s: IBTRS_TLS=%s: not off, on or require",
				  who, e);
			return -EINVAL;
		}
	}
	if (tls != IBTRS_TLS_OFF && tls != IBTRS_TLS_ON &&
	    tls != IBTRS_TLS_REQUIRE) {
		ibtrs_log(IBTRS_LOG_ERR, "%s: unknown TLS mode %d", who, tls);
		return -EINVAL;
	}
	sec->tls = tls;
	if (!psk_file)
		psk_file = env("IBTRS_TLS_PSK");
	if (client && !identity)
		identity = env("IBTRS_IDENTITY");
#ifndef IBTRS_HAVE_TLS
	if (tls != IBTRS_TLS_OFF) {
		ibtrs_log(
			IBTRS_LOG_ERR,
			"%s: TLS %s asked for, but this library was built without GnuTLS",
			who, ibtrs_tls_mode_str(tls));
		return -EOPNOTSUPP;
	}
#endif
	if (!psk_file) {
		if (tls != IBTRS_TLS_OFF) {
			ibtrs_log(
				IBTRS_LOG_ERR,
				"%s: TLS needs a key file of pre-shared keys (--tls-psk FILE)",
				who);
			return -EINVAL;
		}
		if (identity) {
			ibtrs_log(IBTRS_LOG_ERR,
				  "%s: identity %s given without a key file",
				  who, identity);
			return -ENOENT;
		}
		return 0;
	}
	snprintf(sec->psk_file, sizeof(sec->psk_file), "%s", psk_file);
	ret = ibtrs_keyring_load(psk_file, &sec->keys, err, sizeof(err));
	if (ret) {
		ibtrs_log(IBTRS_LOG_ERR, "%s: %s", who, err);
		return ret;
	}
	if (client) {
		sec->psk = identity ? ibtrs_keyring_find(sec->keys, identity)
				    : &sec->keys->keys[0];
		if (!sec->psk) {
			ibtrs_log(IBTRS_LOG_ERR,
				  "%s: identity %s is not in key file %s", who,
				  identity, psk_file);
			ibtrs_sec_fini(sec);
			return -ENOENT;
		}
	}
	return 0;
}

void ibtrs_sec_fini(struct ibtrs_sec *sec)
{
	ibtrs_keyring_free(sec->keys);
	sec->keys = NULL;
	sec->psk = NULL;
}
