/* jemalloc's and tcmalloc's figures, asked by calls the tool makes in a stopped thread at a safe point. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/tmem.h"
#include "ptrace/statscall.h"

/*
 * Each call passes its name and result words through remote_call's data,
 * copied below the thread's red zone: the name at 0, then at NAME_MAX the
 * value (preset to UINT64_MAX: a name the allocator does not know leaves
 * it so), the value's length (jemalloc) and the new value (the epoch).
 */
#define AT_NAME 0
#define AT_VAL  ALLOCSTATS_NAME_MAX
#define AT_LEN  (AT_VAL + 8)
#define AT_NEW  (AT_LEN + 8)
#define DATA_LEN (AT_NEW + 8)

/* What op_ask fills. */
struct ask {
	const struct allocstats_fn *fn;
	uint64_t val[ALLOCSTATS_MAX_NAMES];
	int refused;            /* tcmalloc's instance: -EPERM not its own, -EBUSY none yet */
};

static void put64(uint8_t *d, size_t at, uint64_t v)
{
	memcpy(d + at, &v, sizeof(v));
}

static uint64_t get64(const uint8_t *d, size_t at)
{
	uint64_t v;

	memcpy(&v, d + at, sizeof(v));
	return v;
}

/* One call of the allocator's function about name (NULL: jemalloc's epoch
 * refresh): its value in *v (UINT64_MAX if none). 0 or -errno. */
static int ask_one(struct remote_ctx *ctx, const struct allocstats_fn *fn, const char *name,
		   uint64_t *v)
{
	struct remote_call c = {
		.fn = fn->addr, .data_len = DATA_LEN, .stack_need = STATSCALL_STACK,
		.timeout_ns = STATSCALL_TIMEOUT,
	};
	int err;

	snprintf((char *)c.data + AT_NAME, ALLOCSTATS_NAME_MAX, "%s", name ? name : "epoch");
	put64(c.data, AT_VAL, UINT64_MAX);
	put64(c.data, AT_LEN, 8);
	put64(c.data, AT_NEW, 1);
	if (fn->kind == ALLOCSTATS_MALLCTL) {
		/* mallctl(name, &val, &len, name ? NULL : &new, name ? 0 : 8) */
		c.args[0] = AT_NAME;
		c.args[1] = AT_VAL;
		c.args[2] = AT_LEN;
		c.args[3] = name ? 0 : AT_NEW;
		c.args[4] = name ? 0 : 8;
		c.data_args = name ? 7 : 15;
	} else {
		/* MallocExtension_GetNumericProperty(name, &val) */
		c.args[0] = AT_NAME;
		c.args[1] = AT_VAL;
		c.data_args = 3;
	}
	err = remote_call(ctx, &c);
	if (err)
		return err;
	*v = fn->kind == ALLOCSTATS_MALLCTL && get64(c.data, AT_LEN) != 8 ? UINT64_MAX :
	     get64(c.data, AT_VAL);
	return 0;
}

/* tcmalloc: whether its MallocExtension instance is TCMallocImplementation
 * (not a program's subclass, whose methods the call would run): 0,
 * -EPERM if not, -EBUSY if there is none yet. */
static int instance_check(pid_t tid, const struct allocstats_fn *fn)
{
	uint64_t obj, vt;

	if (tmem_read(tid, fn->instance_at, &obj, sizeof(obj)))
		return -EPERM;
	if (!obj)
		return -EBUSY;
	if (tmem_read(tid, obj, &vt, sizeof(vt)) || vt != fn->vtable)
		return -EPERM;
	return 0;
}

static int op_ask(struct remote_ctx *ctx, void *arg)
{
	struct ask *a = arg;
	const struct allocstats_fn *fn = a->fn;
	uint64_t epoch;
	int err = 0;

	if (fn->kind == ALLOCSTATS_PROPERTY && (err = instance_check(ctx->tid, fn))) {
		a->refused = err;
		return err;
	}
	if (fn->kind == ALLOCSTATS_MALLCTL)
		err = ask_one(ctx, fn, NULL, &epoch);
	for (uint32_t i = 0; !err && i < fn->n && i < ALLOCSTATS_MAX_NAMES; i++)
		err = ask_one(ctx, fn, fn->names[i], &a->val[i]);
	return err;
}

int statscall_ask(const struct safecall_env *env, const struct allocstats_fn *fn,
		  struct allocstats *out, char *why, size_t whylen)
{
	struct safecall_code code = { .n = 0 };
	struct ask a = { .fn = fn };
	int ret;

	if (whylen)
		why[0] = 0;
	for (size_t i = 0; i < fn->ntext; i++)
		safecall_code_add_own(&code, fn->text[i].lo, fn->text[i].hi,
				  fn->kind == ALLOCSTATS_MALLCTL ? "inside jemalloc" :
				  "inside tcmalloc");
	for (size_t i = 0; i < fn->nfork; i++)
		safecall_code_add(&code, fn->fork[i].lo, fn->fork[i].hi, "in fork");
	for (size_t i = 0; i < fn->nwait; i++)
		safecall_code_add_wait(&code, fn->wait[i].lo, fn->wait[i].hi);
	ret = safecall_run(env, &code, op_ask, &a, why, whylen);
	if (a.refused == -EBUSY) {
		snprintf(why, whylen, "tcmalloc's MallocExtension is not set up yet");
		return -EBUSY;
	}
	if (a.refused) {
		snprintf(why, whylen, "tcmalloc's MallocExtension instance is not "
			 "TCMallocImplementation's (the program's own?): not called");
		return -EPERM;
	}
	if (ret == -ETIMEDOUT || ret == -EFAULT)
		snprintf(why, whylen, "%s's function %s: no more calls", fn->allocator,
			 ret == -EFAULT ? "faulted" : "did not return in time");
	else if (ret && whylen && !why[0])
		snprintf(why, whylen, "the call failed: %s", strerror(-ret));
	if (ret)
		return ret;
	ret = allocstats_decode(fn, a.val, ALLOCSTATS_MAX_NAMES, out);
	if (ret)
		snprintf(why, whylen, "%s's answer is implausible", fn->allocator);
	return ret;
}
