# The agent's deepest stack use from each entry point, from gcc -fcallgraph-info=su: frame sizes plus return addresses.
# SPDX-License-Identifier: MIT
# usage: awk -v max=BYTES -f agent_stack.awk agent.ci: prints "agent_alloc N" and
# "agent_free N" and exits 1 if either is past max, or the graph has a cycle.
/^node:/ {
	name = $0; sub(/^node: \{ title: "/, "", name); sub(/".*/, "", name)
	size[name] = match($0, /[0-9]+ bytes/) ? substr($0, RSTART, RLENGTH) + 0 : 0
}
/^edge:/ {
	s = $0; sub(/.*sourcename: "/, "", s); sub(/".*/, "", s)
	d = $0; sub(/.*targetname: "/, "", d); sub(/".*/, "", d)
	if (!((s, d) in seen)) { seen[s, d] = 1; ncall[s]++; callee[s, ncall[s]] = d }
}
function deepest(f,    i, m, c) {
	if (f in memo) return memo[f]
	if (f in busy) { print "agent: recursion through " f; bad = 1; return 0 }
	busy[f] = 1
	m = 0
	for (i = 1; i <= ncall[f]; i++) { c = deepest(callee[f, i]) + 8; if (c > m) m = c }
	delete busy[f]
	memo[f] = size[f] + m
	return memo[f]
}
END {
	for (f in size) if (f ~ /(^|:)agent_(alloc|free)$/) {
		n = f; sub(/.*:/, "", n); d = deepest(f)
		print n, d
		if (d > max) bad = 1
	}
	exit bad
}
