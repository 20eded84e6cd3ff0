# The agent's frame rules, from its .eh_frame as readelf -wF prints it: one C initializer per range of code with one rule.
# SPDX-License-Identifier: MIT
# usage: readelf -wF agent.elf | awk -f agent_cfi.awk > agent_cfi_rows.h
# A row is { lo, hi, base (0: CFA = rsp + off, 1: rbp + off), off, rbp_off
# (the caller's rbp at CFA + rbp_off; 0: rbp kept) } for the offsets [lo, hi)
# of the blob. Exits 1, naming it, on a rule the tool's walk cannot take (a
# CFA expression or another base register, a return address not at CFA - 8,
# rbp saved elsewhere than at the CFA plus a constant), or on no FDE at all.

# The initializer's fields after lo and hi for one row of the table.
function rule(cfa, ra, rbp,    base, r) {
	if (cfa ~ /^rsp[+-][0-9]+$/)
		base = 0
	else if (cfa ~ /^rbp[+-][0-9]+$/)
		base = 1
	else
		return refuse("CFA " cfa)
	if (ra != "c-8")
		return refuse("return address " ra)
	if (rbp == "" || rbp == "u")
		r = 0
	else if (rbp ~ /^c[+-][0-9]+$/)
		r = substr(rbp, 2) + 0
	else
		return refuse("rbp " rbp)
	return base ", " (substr(cfa, 4) + 0) ", " r
}

function refuse(what) {
	printf "agent_cfi.awk: %s (at %s), which the tool's walk cannot take\n", what, loc > "/dev/stderr"
	bad = 1
	return "0, 0, 0"
}

# The last row of the FDE being read ends where the FDE does.
function end_fde() {
	if (!in_fde)
		return
	if (!nrow && !(fde_cie in cie_rule))
		refuse("an FDE of no CIE read")
	else if (!nrow)
		printf "\t{ 0x%s, 0x%s, %s },\n", fde_lo, fde_hi, cie_rule[fde_cie]
	else
		printf "\t{ 0x%s, 0x%s, %s },\n", row_lo, fde_hi, row_rule
	in_fde = 0
	nfde++
}

/ CIE / {
	end_fde()
	cie = $1
	in_cie = 1
	next
}

/ FDE / {
	end_fde()
	fde_cie = $5; sub(/^cie=/, "", fde_cie)
	pc = $6; sub(/^pc=/, "", pc)
	split(pc, r, /\.\./)
	fde_lo = r[1]; fde_hi = r[2]
	in_fde = 1; in_cie = 0; nrow = 0
	next
}

$1 == "LOC" {
	for (i = 1; i <= NF; i++)
		col[i] = $i
	ncol = NF
	next
}

/^[0-9a-f]+ / && NF >= 3 {
	loc = $1
	ra = rbp = ""
	for (i = 3; i <= NF && i <= ncol; i++) {
		if (col[i] == "ra")
			ra = $i
		else if (col[i] == "rbp")
			rbp = $i
	}
	if (in_cie) {
		cie_rule[cie] = rule($2, ra, rbp)
	} else if (in_fde) {
		if (nrow)
			printf "\t{ 0x%s, 0x%s, %s },\n", row_lo, loc, row_rule
		row_lo = loc
		row_rule = rule($2, ra, rbp)
		nrow++
	}
}

END {
	end_fde()
	if (!nfde) {
		print "agent_cfi.awk: no FDE" > "/dev/stderr"
		bad = 1
	}
	exit bad
}
