/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the per-process control socket (ctl.c) and the operations an
 * object published on it provides: client sessions (clt_ctl.c) and server
 * contexts (srv_ctl.c) each register a node with their struct ctl_ops.
 * ctl.c knows nothing of either: it lists the objects in the status
 * document's sections and routes each command to the object it names.
 */
#ifndef IBTRS_CTL_H
#define IBTRS_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "ibtrs.h"
#include "json.h"

/* The arrays of the status document, in the order they are written. */
enum ctl_section {
	CTL_SECTION_CLIENTS, /* "clients" */
	CTL_SECTION_SERVERS, /* "servers" */
	CTL_NR_SECTIONS,
};

/* Most words of a request line. */
#define CTL_MAX_ARGS 8

/**
 * struct ctl_cmd - one command a kind of object answers
 * @word: the request's first word
 * @sub: its second word, or NULL (e.g. "add" of "path add")
 * @what: names the command in an error answer
 * @min_args: fewest words of the request, @word included
 * @max_args: most words
 * @name_arg: index of the word naming the object (struct ctl_ops @ident)
 * @all: the name is optional (the command then goes to every object of
 *	the kind) and every object of that name takes it; the answer is the
 *	count of objects that did, -ENOENT when a name matched none. Without
 *	@all the newest object of that name takes it and its return value is
 *	the answer.
 * @fn: run the command on @obj; @argv holds @argc words, @argv[0] being
 *	@word; returns a value >= 0 or a negative errno
 */
struct ctl_cmd {
	const char *word;
	const char *sub;
	const char *what;
	unsigned int min_args;
	unsigned int max_args;
	unsigned int name_arg;
	bool all;
	int (*fn)(void *obj, unsigned int argc, char **argv);
};

/**
 * struct ctl_ops - what one kind of object shows the control socket
 * @section: the status array its objects are listed in
 * @ident: the name commands address an object by (NULL: none)
 * @status: append the object to the status document as one JSON value
 * @cmds: the commands it answers, ended by an entry with a NULL @word;
 *	NULL for none
 *
 * Context: every operation runs on the control thread with the control
 * lock held: the object is not unregistered meanwhile.
 */
struct ctl_ops {
	enum ctl_section section;
	const char *(*ident)(void *obj);
	void (*status)(void *obj, struct json *j);
	const struct ctl_cmd *cmds;
};

/* Embedded in each published object. */
struct ctl_node {
	struct ctl_node *next;
	const struct ctl_ops *ops;
	void *obj;
	bool registered;
};

/* Publish @obj on the control socket; opens it with the first object. */
void ibtrs_ctl_register(struct ctl_node *node, const struct ctl_ops *ops,
			void *obj);
/* Withdraw it; waits for a request using it; closes the socket last. */
void ibtrs_ctl_unregister(struct ctl_node *node);
/* The directory holding the control sockets. */
int ibtrs_ctl_runtime_dir(char *buf, size_t len);

/*
 * Argument parsers for command functions. ctl_parse_uint(): a decimal
 * number below @limit; ctl_parse_word(): the index of @s in @words (@n
 * entries, NULL entries skipped). Both return 0 or -EINVAL.
 */
int ctl_parse_uint(const char *s, unsigned long limit, unsigned long *v);
int ctl_parse_word(const char *s, const char *const *words, unsigned int n,
		   unsigned int *idx);

#endif /* IBTRS_CTL_H */
