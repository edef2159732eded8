// SPDX-License-Identifier: MIT
/*
 * sec.c - the security options of the subcommands that open a server or a
 * session: --tls, --tls-psk and --identity, checked before anything opens.
 *
 * The library resolves the same settings at open and refuses bad ones, but
 * it logs the cause only when asked to (IBTRS_LOG_LEVEL) and answers an
 * errno: the tool reads the key file itself first, with the library's own
 * reader (keyring.c, compiled in again), so that a mistyped mode, a missing
 * or world-readable key file, or an identity that is not in it is a usage
 * error that names its cause. The environment variables the library reads
 * (IBTRS_TLS, IBTRS_TLS_PSK, IBTRS_IDENTITY) count where an option is
 * missing, as they would in the library.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyring.h"
#include "tool.h"

/**
 * sec_env() - an environment variable, NULL when unset or empty
 * @name: its name
 *
 * Return: the value, or NULL.
 */
static const char *sec_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/**
 * tool_sec_parse_tls() - parse a TLS mode as --tls and IBTRS_TLS take it
 * @s: "off", "on" or "require"
 *
 * Return: the enum ibtrs_tls_mode, or -EINVAL.
 */
int tool_sec_parse_tls(const char *s)
{
	if (!strcmp(s, "off"))
		return IBTRS_TLS_OFF;
	if (!strcmp(s, "on"))
		return IBTRS_TLS_ON;
	if (!strcmp(s, "require"))
		return IBTRS_TLS_REQUIRE;
	return -EINVAL;
}

/**
 * tool_sec_tls_str() - the name of a TLS mode
 * @tls: enum ibtrs_tls_mode
 *
 * Return: "off", "on", "require", or "default".
 */
const char *tool_sec_tls_str(int tls)
{
	switch (tls) {
	case IBTRS_TLS_OFF:
		return "off";
	case IBTRS_TLS_ON:
		return "on";
	case IBTRS_TLS_REQUIRE:
		return "require";
	}
	return "default";
}

int tool_sec_opt(struct tool_sec *sec, int c, const char *arg)
{
	int tls;

	switch (c) {
	case TOOL_OPT_TLS:
		tls = tool_sec_parse_tls(arg);
		if (tls < 0) {
			tool_err(
				"invalid --tls '%s': expected off, on or require",
				arg);
			return TOOL_EXIT_USAGE;
		}
		sec->tls = tls;
		return 0;
	case TOOL_OPT_TLS_PSK:
		if (!arg[0]) {
			tool_err("invalid --tls-psk '': expected a key file");
			return TOOL_EXIT_USAGE;
		}
		sec->psk_file = arg;
		return 0;
	case TOOL_OPT_IDENTITY:
		if (!arg[0] || strlen(arg) > IBTRS_IDENTITY_MAX ||
		    strpbrk(arg, ": \t")) {
			tool_err(
				"invalid --identity '%s': expected the identity of a key (1..%d bytes, no ':' or spaces)",
				arg, IBTRS_IDENTITY_MAX);
			return TOOL_EXIT_USAGE;
		}
		sec->identity = arg;
		return 0;
	}
	return TOOL_EXIT_USAGE;
}

int tool_sec_resolve(struct tool_sec *sec, bool client)
{
	const char *tls_src = "--tls", *psk_src = "--tls-psk";
	const char *id_src = "--identity", *e;
	struct ibtrs_keyring *kr = NULL;
	char err[512];
	int ret;

	if (sec->tls == IBTRS_TLS_DEFAULT) {
		e = sec_env("IBTRS_TLS");
		sec->tls = e ? tool_sec_parse_tls(e) : IBTRS_TLS_OFF;
		tls_src = "IBTRS_TLS";
		if (sec->tls < 0) {
			tool_err(
				"invalid IBTRS_TLS='%s' in the environment: expected off, on or require",
				e);
			return TOOL_EXIT_USAGE;
		}
	}
	if (!sec->psk_file) {
		sec->psk_file = sec_env("IBTRS_TLS_PSK");
		psk_src = "IBTRS_TLS_PSK";
	}
	if (client && !sec->identity) {
		sec->identity = sec_env("IBTRS_IDENTITY");
		id_src = "IBTRS_IDENTITY";
	}
	if (!client)
		sec->identity = NULL;
	if (!sec->psk_file) {
		if (sec->tls != IBTRS_TLS_OFF) {
			tool_err(
				"%s %s needs a key file of pre-shared keys: --tls-psk FILE (make one with 'psktool -u NAME -p FILE')",
				tls_src, tool_sec_tls_str(sec->tls));
			return TOOL_EXIT_USAGE;
		}
		if (sec->identity) {
			tool_err("%s '%s' needs a key file: --tls-psk FILE",
				 id_src, sec->identity);
			return TOOL_EXIT_USAGE;
		}
		sec->nr_keys = 0;
		sec->key_identity[0] = '\0';
		return 0;
	}
	ret = ibtrs_keyring_load(sec->psk_file, &kr, err, sizeof(err));
	if (ret) {
		tool_err("%s: %s", psk_src, err);
		return TOOL_EXIT_USAGE;
	}
	sec->nr_keys = kr->nr;
	if (client) {
		const struct ibtrs_psk *k =
			sec->identity ? ibtrs_keyring_find(kr, sec->identity)
				      : &kr->keys[0];

		if (!k) {
			tool_err(
				"invalid %s '%s': no such identity in key file %s",
				id_src, sec->identity, sec->psk_file);
			ibtrs_keyring_free(kr);
			return TOOL_EXIT_USAGE;
		}
		snprintf(sec->key_identity, sizeof(sec->key_identity), "%s",
			 k->identity);
	}
	ibtrs_keyring_free(kr);
	return 0;
}

const char *tool_sec_describe(const struct tool_sec *sec, char *buf, size_t len)
{
	if (!sec->nr_keys)
		snprintf(
			buf, len,
			"no keys: sessions protected by their own secret only, data in clear");
	else if (sec->key_identity[0])
		snprintf(buf, len, "tls %s, key '%s' from %s",
			 tool_sec_tls_str(sec->tls), sec->key_identity,
			 sec->psk_file);
	else
		snprintf(buf, len, "tls %s, %u key%s from %s",
			 tool_sec_tls_str(sec->tls), sec->nr_keys,
			 sec->nr_keys == 1 ? "" : "s", sec->psk_file);
	return buf;
}

const char *tool_sec_hint(const struct tool_sec *sec, int err, bool client)
{
	/* A server's open fails on its own settings only. */
	if (!client && err != EOPNOTSUPP)
		return "";
	switch (err) {
	case EOPNOTSUPP:
		if (sec && sec->tls != IBTRS_TLS_OFF)
			return " (TLS runs on the tcp backend only, and only in a library built with GnuTLS)";
		return "";
	case EACCES:
	case EPERM:
	case EKEYREJECTED:
	case EKEYREVOKED:
	case EKEYEXPIRED:
	case EBADMSG:
		if (sec && sec->nr_keys)
			return " (the peer refused the key: the same identity and key must be in the key files of both sides)";
		return " (the server wants a key: --tls-psk FILE)";
	case EPROTONOSUPPORT:
		if (sec && sec->tls == IBTRS_TLS_OFF)
			return " (does the server require TLS? --tls on --tls-psk FILE)";
		return " (does the server speak TLS? its --tls and this one's must fit)";
	case EPROTO:
	case ECONNRESET:
		if (sec && sec->tls == IBTRS_TLS_OFF)
			return " (does the server require TLS? --tls on --tls-psk FILE)";
		return "";
	}
	return "";
}
