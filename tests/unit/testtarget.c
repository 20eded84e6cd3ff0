/* For tests that know only a pid: an unwinder or a frame table over a target of its own. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stddef.h>

#include "model/target.h"
#include "stacks/frametab.h"
#include "stacks/unwind.h"
#include "testtarget.h"

#define TESTTARGET_MAX 16

/* The targets made here, by what reads through each (an unwinder or a
 * frame table). */
static struct {
	void *user;
	struct target *t;
} made[TESTTARGET_MAX];

/* A new target for pid in a free slot, into *slot. NULL (errno set) if none. */
static struct target *new_target(pid_t pid, size_t *slot)
{
	size_t i;

	for (i = 0; i < TESTTARGET_MAX && made[i].t; i++)
		;
	if (i == TESTTARGET_MAX) {
		errno = ENOSPC;
		return NULL;
	}
	made[i].t = target_new(pid, 0);
	*slot = i;
	return made[i].t;
}

/* Free the target in slot i. */
static void free_slot(size_t i)
{
	target_free(made[i].t);
	made[i].t = NULL;
	made[i].user = NULL;
}

/* Free the target made for user, once user is freed. */
static void free_target(void *user)
{
	for (size_t i = 0; i < TESTTARGET_MAX; i++)
		if (made[i].t && made[i].user == user)
			free_slot(i);
}

struct unwinder *testtarget_unwinder(pid_t pid)
{
	size_t i;
	struct target *t = new_target(pid, &i);
	struct unwinder *u;

	if (!t)
		return NULL;
	u = unwinder_new_target(t);
	if (u)
		made[i].user = u;
	else
		free_slot(i);
	return u;
}

void testtarget_unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	unwinder_free(u);
	free_target(u);
}

struct frametab *testtarget_frametab(pid_t pid, struct shm_frame *table)
{
	size_t i;
	struct target *t = pid > 0 ? new_target(pid, &i) : NULL;
	struct frametab *ft;

	if (!t) {
		errno = EINVAL;
		return NULL;
	}
	ft = frametab_new_target(t, table);
	if (ft) {
		made[i].user = ft;
	} else {
		free_slot(i);
		errno = EINVAL;
	}
	return ft;
}

void testtarget_frametab_free(struct frametab *ft)
{
	if (!ft)
		return;
	frametab_free(ft);
	free_target(ft);
}
