/* heapattach report: leak suspects, time plots, flame graphs and diffs from heapattach's dumps. */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPATTACH_REPORT_H
#define HEAPATTACH_REPORT_H

/* The report subcommand; argv[0] is "report". Returns the exit status:
 * 0 done, 1 a file could not be read or written, 2 bad command line. */
int report_main(int argc, char **argv);

#endif
