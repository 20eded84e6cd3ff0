/* Frame-rule table: the target's objects behind its code mappings, and their CFI records. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "model/elfobj.h"
#include "model/proc.h"
#include "model/target.h"
#include "stacks/frametab_priv.h"
#include "stacks/gocgo.h"

static void obj_free(struct ft_obj *o)
{
	if (o->dw)
		dwarf_end(o->dw);
	if (o->eh)
		dwarf_cfi_end(o->eh);
	free(o);
}

/* The CFI record for object e, made on first use. */
static struct ft_obj *get_obj(struct frametab *ft, struct elfobj *e)
{
	struct ft_obj *o;

	for (size_t i = 0; i < ft->nobjs; i++)
		if (ft->objs[i]->elf == e)
			return ft->objs[i];
	o = xcalloc(1, sizeof(*o));
	o->elf = e;
	o->eh = dwarf_getcfi_elf(elfobj_elf(e));
	ft->st.objects++;
	if (ft->nobjs == ft->cap) {
		ft->cap = ft->cap ? ft->cap * 2 : 16;
		ft->objs = xrealloc(ft->objs, ft->cap * sizeof(*ft->objs));
	}
	ft->objs[ft->nobjs++] = o;
	return o;
}

void ft_drop_binds(struct frametab *ft)
{
	free(ft->binds);
	ft->binds = NULL;
	ft->nbinds = 0;
	ft->binds_ver = 0;	/* versions start at 1 */
}

/* Whether o, the object of mapping m, is Go's with cgo calls (o->go,
 * o->go_cgo): its symbols are read only if it is Go's. */
static void find_go(struct frametab *ft, const struct proc_map *m, struct ft_obj *o)
{
	struct elfobj *e;

	o->go = -1;
	if (!gocgo_is_go(o->elf))
		return;
	e = target_object(ft->t, m, TARGET_OBJ_SYMS, NULL);
	if (e && !gocgo_find(e, &o->go_cgo))
		o->go = 1;
	else
		ft->st.go_nosyms++;
}

/*
 * The object holding code address pc and its load bias: 0, -ENOENT when pc
 * is in no executable file mapping (or the vDSO), -EAGAIN when pc is in no
 * known mapping and the maps were read a moment ago (target_find), or
 * another -errno.
 */
int ft_resolve(struct frametab *ft, uint64_t pc, struct ft_obj **obj, uint64_t *bias)
{
	const struct proc_map *m;
	struct target_stats ts;
	struct ft_bind *b;
	int ret;

	ret = target_find(ft->t, pc, &m);
	target_get_stats(ft->t, &ts);
	ft->st.maps_reads = ts.maps_reads;
	if (ret == -EAGAIN)
		ft->st.throttled++;
	if (ret)
		return ret;
	if (!(m->prot & PROC_MAP_X) || !m->path ||
	    (m->path[0] != '/' && strcmp(m->path, "[vdso]")))
		return -ENOENT;
	if (ft->binds_ver != target_maps_version(ft->t)) {
		ft_drop_binds(ft);
		ft->nbinds = target_maps(ft->t)->n;
		ft->binds = xcalloc(ft->nbinds ? ft->nbinds : 1, sizeof(*ft->binds));
		ft->binds_ver = target_maps_version(ft->t);
	}
	b = &ft->binds[m - target_maps(ft->t)->v];
	if (!b->obj && !b->err) {
		struct elfobj *e = target_object(ft->t, m, 0, &b->err);

		if (!b->err && target_map_bias(ft->t, m, e, &b->bias))
			b->err = -ENOENT;
		if (!b->err)
			b->obj = get_obj(ft, e);
		if (!b->err && !b->obj->go)
			find_go(ft, m, b->obj);
	}
	if (b->err)
		return b->err;
	*obj = b->obj;
	*bias = b->bias;
	return 0;
}

void ft_drop_objects(struct frametab *ft)
{
	for (size_t i = 0; i < ft->nobjs; i++)
		obj_free(ft->objs[i]);
	free(ft->objs);
	ft->objs = NULL;
	ft->nobjs = ft->cap = 0;
}

