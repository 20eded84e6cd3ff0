/* Test driver for pyframes: decodes the code objects of a live Python (fixtures/pycode_live.py) from outside and checks them against what it printed. */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/elfobj.h"
#include "model/proc.h"
#include "python/pyfind.h"
#include "python/pyframes.h"
#include "shm.h"
#include "python/pylayout.h"
#include "stacks/symbolize.h"
#include "model/target.h"

/*
 * usage: pycodetest PYTHON SCRIPT
 * Runs PYTHON SCRIPT as a child, reads its "code ..." lines up to "ready"
 * and, through a target on the child, finds PyCode_Type in its objects'
 * symbols (it must be at id(types.CodeType)), decodes each code object at the
 * instruction it names and at the unknown index (0x7fff), checking
 * function (co_qualname 3.11+, co_name before), file and line. Exit 0 all
 * match, 1 a mismatch, 2 usage or a broken child.
 */

/* The layout of each version: pylayout.c's table (this test checks its
 * code-object part too). */
static int layout_for(int minor, struct py_layout *l)
{
	const struct py_layout *t = py_layout_for(minor);

	if (!t)
		return -ENOTSUP;
	*l = *t;
	return 0;
}

/* &PyCode_Type in the target, from the symbols of the objects it maps
 * (.dynsym, .symtab), as pyfind finds the interpreter's; 0 if none. */
static uint64_t code_type_from_symbols(struct target *t)
{
	const struct proc_maps *maps = target_maps(t);

	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		const struct elfobj_sym *sym;
		struct elfobj *e;
		uint64_t bias;

		if (!(m->prot & PROC_MAP_X) || !m->path || m->path[0] != '/')
			continue;
		e = target_object(t, m, TARGET_OBJ_SYMS, NULL);
		sym = e ? elfobj_lookup(e, "PyCode_Type", 0) : NULL;
		if (sym && !target_map_bias(t, m, e, &bias))
			return sym->value + bias;
		maps = target_maps(t);	/* target_object may have read them again */
	}
	return 0;
}

struct expect {
	uint64_t addr, code_type;
	int minor;
	unsigned idx;
	int line, firstlineno;
	char qualname[512], name[512], file[512];
};

/* Split s at tabs into at most n fields; the number found. */
static int split(char *s, char **f, int n)
{
	int k = 0;

	while (k < n) {
		f[k++] = s;
		s = strchr(s, '\t');
		if (!s)
			break;
		*s++ = 0;
	}
	return k;
}

static int parse(char *line, struct expect *e)
{
	char *f[10];

	line[strcspn(line, "\n")] = 0;
	if (split(line, f, 10) != 10 || strcmp(f[0], "code"))
		return -EINVAL;
	e->addr = strtoull(f[1], NULL, 10);
	e->minor = atoi(f[2]);
	e->code_type = strtoull(f[3], NULL, 10);
	e->idx = (unsigned)atoi(f[4]);
	e->line = atoi(f[5]);
	snprintf(e->qualname, sizeof(e->qualname), "%s", f[6]);
	snprintf(e->name, sizeof(e->name), "%s", f[7]);
	snprintf(e->file, sizeof(e->file), "%s", f[8]);
	e->firstlineno = atoi(f[9]);
	return 0;
}

static int check_one(struct pyframes *pf, const struct expect *e, unsigned idx, int line)
{
	const char *want = e->minor >= 11 ? e->qualname : e->name;
	uint64_t w = e->addr | (uint64_t)idx << SHM_PY_INSTR_SHIFT, pc;
	uint8_t end;
	struct sym_info si;

	pyframes_decode(pf, &w, 1, &pc, &end);
	if (pyframes_lookup(pf, pc - 1, &si) || !si.function || !si.file ||
	    strcmp(si.function, want) || strcmp(si.file, e->file) || si.line != line) {
		fprintf(stderr, "pycodetest: code %#llx idx %u: got %s %s:%d, want %s %s:%d\n",
			(unsigned long long)e->addr, idx, si.function ? si.function : "(null)",
			si.file ? si.file : "(null)", si.line, want, e->file, line);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct expect ex[256];
	struct py_target pt = { 0 };
	struct pyframes *pf = NULL;
	struct target *t = NULL;
	int pipefd[2], n = 0, bad = 0, ready = 0, status;
	char line[2048];
	pid_t pid;
	FILE *in;

	if (argc != 3) {
		fprintf(stderr, "usage: pycodetest PYTHON SCRIPT\n");
		return 2;
	}
	if (pipe(pipefd))
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (!pid) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execl(argv[1], argv[1], argv[2], (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	in = fdopen(pipefd[0], "r");
	while (in && fgets(line, sizeof(line), in)) {
		if (!strncmp(line, "ready", 5)) {
			ready = 1;
			break;
		}
		if (n < (int)(sizeof(ex) / sizeof(ex[0])) && !parse(line, &ex[n]))
			n++;
	}
	if (!ready || !n || layout_for(ex[0].minor, &pt.lay)) {
		fprintf(stderr, "pycodetest: %s gave %d code objects%s\n", argv[1], n,
			ready ? ", unknown version" : " and no ready line");
		bad = 2;
		goto out;
	}
	pt.minor = ex[0].minor;
	t = target_new(pid, 0);
	pt.code_type = t ? code_type_from_symbols(t) : 0;
	if (pt.code_type != ex[0].code_type) {
		fprintf(stderr, "pycodetest: PyCode_Type at %#llx by the symbols, %#llx by the script\n",
			(unsigned long long)pt.code_type, (unsigned long long)ex[0].code_type);
		bad = 1;
		goto out;
	}
	pf = pyframes_new(t, &pt);
	for (int i = 0; i < n; i++) {
		bad |= check_one(pf, &ex[i], ex[i].idx, ex[i].line);
		bad |= check_one(pf, &ex[i], SHM_PY_INSTR_UNKNOWN, ex[i].firstlineno);
	}
	printf("pycodetest: Python 3.%d, %d code objects, %s\n", pt.minor, n,
	       bad ? "MISMATCH" : "all match");
out:
	pyframes_free(pf);
	if (t)
		target_free(t);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (in)
		fclose(in);
	return bad;
}
