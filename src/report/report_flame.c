/* Flame graph as one self-contained SVG: a tree of frames laid out left heavy, with a zoom and search script. */
/* SPDX-License-Identifier: MIT */

/*
 * The stacks are merged into a tree (root "all"; a node per distinct path
 * of names), found through a hash of (parent, name). Each node's value is
 * the bytes of every stack through it. Children are placed largest first;
 * a node's x is a fraction of the root's width, so the script can zoom by
 * rescaling (data-x, data-w, data-d on each frame) without the tree.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/hash.h"
#include "base/xmalloc.h"
#include "report/report_flame.h"
#include "report/report_fmt.h"

#define FL_W     1200.0
#define FL_PAD   10.0
#define FL_FH    16.0
#define FL_TOP   54.0
#define FL_BOT   26.0
#define FL_MINPX 0.1

struct node {
	const char *name;
	double value, x;        /* x: fraction of the root's width */
	size_t parent, child, sibling;  /* index + 1; 0 none */
	size_t depth;
};

struct tree {
	struct node *n;
	size_t len, cap;
	size_t *slot;           /* hash of (parent, name): index + 1 */
	size_t scap;
	size_t maxdepth;
};

static uint64_t key_hash(size_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *c = name; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
	return mix64(h ^ mix64(parent));
}

static void rehash(struct tree *t, size_t cap)
{
	size_t *slot = xcalloc(cap, sizeof(size_t));

	for (size_t k = 1; k < t->len; k++) {	/* the root is in no slot */
		size_t i = key_hash(t->n[k].parent, t->n[k].name) & (cap - 1);

		while (slot[i])
			i = (i + 1) & (cap - 1);
		slot[i] = k + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->scap = cap;
}

/* The child of parent (an index) named name, created when new. */
static size_t child_of(struct tree *t, size_t parent, const char *name)
{
	size_t i;

	if (t->len * 2 >= t->scap)
		rehash(t, t->scap ? t->scap * 2 : 1024);
	for (i = key_hash(parent + 1, name) & (t->scap - 1); t->slot[i]; i = (i + 1) & (t->scap - 1)) {
		struct node *c = &t->n[t->slot[i] - 1];

		if (c->parent == parent + 1 && !strcmp(c->name, name))
			return t->slot[i] - 1;
	}
	if (t->len == t->cap) {
		t->cap *= 2;
		t->n = xrealloc(t->n, t->cap * sizeof(*t->n));
	}
	t->n[t->len] = (struct node){
		.name = name, .parent = parent + 1, .depth = t->n[parent].depth + 1,
		.sibling = t->n[parent].child,
	};
	t->n[parent].child = t->len + 1;
	if (t->n[t->len].depth > t->maxdepth)
		t->maxdepth = t->n[t->len].depth;
	t->slot[i] = ++t->len;
	return t->len - 1;
}

static const struct node *g_nodes;

static int cmp_value(const void *a, const void *b)
{
	double x = g_nodes[*(const size_t *)a].value, y = g_nodes[*(const size_t *)b].value;

	if (x != y)
		return x > y ? -1 : 1;
	return strcmp(g_nodes[*(const size_t *)a].name, g_nodes[*(const size_t *)b].name);
}

/* Place every node: children of a node side by side from its x, largest first. */
static void layout(struct tree *t)
{
	size_t *kids = xmalloc(t->len * sizeof(size_t));

	/* parents come before their children in t->n, so one pass in order works */
	for (size_t p = 0; p < t->len; p++) {
		size_t k = 0;
		double x = t->n[p].x;

		for (size_t c = t->n[p].child; c; c = t->n[c - 1].sibling)
			kids[k++] = c - 1;
		g_nodes = t->n;
		qsort(kids, k, sizeof(size_t), cmp_value);
		g_nodes = NULL;
		for (size_t i = 0; i < k; i++) {
			t->n[kids[i]].x = x;
			x += t->n[kids[i]].value / t->n[0].value;
		}
	}
	free(kids);
}

/* A warm color from the name: the same name, the same color. */
static void color(const char *name, char *buf, size_t len)
{
	uint64_t h = key_hash(0, name);
	unsigned r = 205 + (unsigned)(h % 51), g = (unsigned)((h >> 8) % 200), b = (unsigned)((h >> 16) % 56);

	snprintf(buf, len, "rgb(%u,%u,%u)", r, g, b);
}

static const char flame_script[] =
"(function(){\n"
"var P=document.currentScript?document.currentScript.getAttribute('data-p'):null;\n"
"if(!P){var s=document.getElementsByTagName('script');P=s[s.length-1].getAttribute('data-p');}\n"
"var root=document.getElementById(P+'svg'),W=%g,L=%g,A=W-2*L;\n"
"var fr=[].slice.call(root.querySelectorAll('g.frame'));\n"
"var det=document.getElementById(P+'details'),unz=document.getElementById(P+'unzoom'),\n"
"    mat=document.getElementById(P+'matched');\n"
"function num(g,a){return +g.getAttribute('data-'+a);}\n"
"function fit(g){var r=g.querySelector('rect'),t=g.querySelector('text'),\n"
"  n=g.getAttribute('data-n'),c=Math.floor((+r.getAttribute('width')-6)/7);\n"
"  t.textContent=c<3?'':(n.length<=c?n:n.slice(0,c-2)+'..');}\n"
"function place(g,x,w){var r=g.querySelector('rect'),t=g.querySelector('text');\n"
"  r.setAttribute('x',x.toFixed(2));r.setAttribute('width',w.toFixed(2));\n"
"  t.setAttribute('x',(x+3).toFixed(2));fit(g);}\n"
"function zoom(z){var x0=num(z,'x'),w0=num(z,'w'),d0=num(z,'d'),e=1e-9;\n"
"  fr.forEach(function(g){var x=num(g,'x'),w=num(g,'w'),d=num(g,'d');\n"
"    var inn=d>=d0&&x>=x0-e&&x+w<=x0+w0+e,anc=d<d0&&x<=x0+e&&x+w>=x0+w0-e;\n"
"    if(!inn&&!anc){g.style.display='none';return;}\n"
"    g.style.display='';g.style.opacity=anc?0.55:1;\n"
"    place(g,inn?L+(x-x0)/w0*A:L,inn?w/w0*A:A);});\n"
"  unz.style.display='';}\n"
"function unzoom(){fr.forEach(function(g){g.style.display='';g.style.opacity=1;\n"
"  place(g,L+num(g,'x')*A,num(g,'w')*A);});unz.style.display='none';}\n"
"function search(re){var iv=[];fr.forEach(function(g){var r=g.querySelector('rect');\n"
"  if(!r.hasAttribute('data-c'))r.setAttribute('data-c',r.getAttribute('fill'));\n"
"  var m=re&&re.test(g.getAttribute('data-n'));\n"
"  r.setAttribute('fill',m?'rgb(230,0,230)':r.getAttribute('data-c'));\n"
"  if(m)iv.push([num(g,'x'),num(g,'x')+num(g,'w')]);});\n"
"  iv.sort(function(a,b){return a[0]-b[0];});var tot=0,end=-1;\n"
"  iv.forEach(function(v){if(v[0]>=end){tot+=v[1]-v[0];end=v[1];}\n"
"    else if(v[1]>end){tot+=v[1]-end;end=v[1];}});\n"
"  mat.textContent=re?'Matched: '+(100*tot).toFixed(1)+'%%':'';}\n"
"fr.forEach(function(g){g.addEventListener('click',function(){zoom(g);});\n"
"  g.addEventListener('mouseover',function(){det.textContent=g.querySelector('title').textContent;});\n"
"  g.addEventListener('mouseout',function(){det.textContent=' ';});});\n"
"unz.addEventListener('click',unzoom);\n"
"document.getElementById(P+'search').addEventListener('click',function(){\n"
"  var q=prompt('Search (regular expression)','');\n"
"  if(q===null)return;try{search(q?new RegExp(q):null);}catch(e){mat.textContent='bad expression';}});\n"
"})();\n";

/* One frame: a <g> with its title, box and label (cut to fit, as the script does). */
static void put_frame(FILE *f, const struct node *n, double total, double height)
{
	double x = FL_PAD + n->x * (FL_W - 2 * FL_PAD);
	double w = n->value / total * (FL_W - 2 * FL_PAD);
	double y = height - FL_BOT - (double)(n->depth + 1) * FL_FH;
	char fill[32], b[32];
	size_t c = w > 6 ? (size_t)((w - 6) / 7) : 0;
	size_t len = strlen(n->name);

	color(n->name, fill, sizeof(fill));
	fprintf(f, "<g class=\"frame\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%zu\" data-n=\"",
		n->x, n->value / total, n->depth);
	rfmt_xml(f, n->name);
	fputs("\"><title>", f);
	rfmt_xml(f, n->name);
	fprintf(f, " (%s, %.2f%%)</title>", rfmt_bytes(b, sizeof(b), n->value),
		100 * n->value / total);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\" rx=\"2\"/>",
		x, y, w, FL_FH - 1, fill);
	fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FL_FH - 4.5);
	if (c >= 3) {
		if (len <= c) {
			rfmt_xml(f, n->name);
		} else {
			char *cut = xstrdup(n->name);

			cut[c - 2] = 0;	/* byte cut: a name's UTF-8 may lose its end ('?') */
			rfmt_xml(f, cut);
			fputs("..", f);
			free(cut);
		}
	}
	fputs("</text></g>\n", f);
}

int rflame_svg(FILE *f, const struct rflame_stack *st, size_t n, const char *title,
	       const char *pfx, int inline_svg)
{
	struct tree t = { .cap = 1024 };
	double total;
	double height;
	char b[32];

	t.n = xmalloc(t.cap * sizeof(*t.n));
	t.n[0] = (struct node){ .name = "all" };
	t.len = 1;
	for (size_t i = 0; i < n; i++) {
		size_t cur = 0;

		if (!(st[i].value > 0) || !isfinite(st[i].value))
			continue;
		t.n[0].value += st[i].value;
		if (!st[i].nframes) {
			cur = child_of(&t, cur, "[no stack]");
			t.n[cur].value += st[i].value;
		}
		for (size_t k = st[i].nframes; k-- > 0;) {
			cur = child_of(&t, cur, st[i].frames[k]);
			t.n[cur].value += st[i].value;
		}
	}
	total = t.n[0].value > 0 ? t.n[0].value : 1;
	layout(&t);
	height = FL_TOP + (double)(t.maxdepth + 1) * FL_FH + FL_BOT;
	if (!inline_svg)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%ssvg\" class=\"flame\" "
		"width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		"font-family=\"Verdana, sans-serif\" font-size=\"12\">\n",
		pfx, FL_W, height, FL_W, height);
	fputs("<style>g.frame{cursor:pointer} g.frame:hover rect{stroke:#000;stroke-width:0.5}"
	      " text{pointer-events:none} .btn{cursor:pointer;fill:#036}</style>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fdfdf6\"/>\n",
		FL_W, height);
	fprintf(f, "<text x=\"%.0f\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">", FL_W / 2);
	rfmt_xml(f, title);
	fprintf(f, "</text>\n<text x=\"%.0f\" y=\"40\" text-anchor=\"middle\" fill=\"#555\">"
		"total %s; click a frame to zoom</text>\n", FL_W / 2, rfmt_bytes(b, sizeof(b), t.n[0].value));
	fprintf(f, "<text id=\"%sunzoom\" class=\"btn\" x=\"%.0f\" y=\"22\" style=\"display:none\">"
		"Reset zoom</text>\n", pfx, FL_PAD);
	fprintf(f, "<text id=\"%ssearch\" class=\"btn\" x=\"%.0f\" y=\"22\" text-anchor=\"end\">"
		"Search</text>\n", pfx, FL_W - FL_PAD);
	fprintf(f, "<text id=\"%smatched\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\"> </text>\n",
		pfx, FL_W - FL_PAD, height - 8);
	fprintf(f, "<text id=\"%sdetails\" x=\"%.0f\" y=\"%.0f\"> </text>\n", pfx, FL_PAD,
		height - 8);
	for (size_t i = 0; i < t.len; i++)
		if (t.n[i].value / total * (FL_W - 2 * FL_PAD) >= FL_MINPX)
			put_frame(f, &t.n[i], total, height);
	fprintf(f, "<script type=\"text/javascript\" data-p=\"%s\"><![CDATA[\n", pfx);
	fprintf(f, flame_script, FL_W, FL_PAD);
	fputs("]]></script>\n</svg>\n", f);
	free(t.n);
	free(t.slot);
	return ferror(f) ? -EIO : 0;
}
