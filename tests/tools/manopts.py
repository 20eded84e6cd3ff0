#!/usr/bin/env python3
# Checks that the man page documents exactly the options, defaults, exit codes and version that heapattach --help and --version print.
# SPDX-License-Identifier: MIT
"""usage: manopts.py HELP_FILE VERSION_FILE MAN_TEXT_FILE
       manopts.py --self-test

HELP_FILE is the output of `heapattach --help`, VERSION_FILE of
`heapattach --version`, MAN_TEXT_FILE the man page rendered as plain text
(groff -man -Tascii -P-cbou, wide, no hyphenation). Compares:
  - the options: every short and long option of the help is a tag of the
    man page's OPTIONS section and the other way round, paired alike
    (-p with --pid);
  - the defaults: where the help says "(default X" for an option, the man
    page's text for that option says "default X" too;
  - the exit codes: the numbers of the help's "Exit status:" paragraph are
    the tags of the man page's EXIT STATUS section;
  - the version: the man page's footer names the version --version prints.
Prints each difference and exits 1 if there is any, else prints a summary.
"""
import re
import sys

OPT_RE = re.compile(r'(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])')
DEFAULT_RE = re.compile(r'\(default:? ([^;),]+)')


def squash(text):
    return ' '.join(text.split())


def help_options(help_text):
    """{option tag: (set of names, description)} from the help's option lines."""
    opts = {}
    cur = None
    for line in help_text.splitlines():
        m = re.match(r'^\s{2,}((?:-[a-zA-Z], )?--[a-z][a-z0-9-]*)(.*)$', line)
        if m:
            names = frozenset(OPT_RE.findall(m.group(1)))
            cur = names
            opts[cur] = m.group(2)
        elif cur is not None and line.startswith('   ') and line.strip():
            opts[cur] += ' ' + line
        else:
            cur = None
    return {k: squash(v) for k, v in opts.items()}


def exit_codes_help(help_text):
    m = re.search(r'Exit status:(.*?)(?:\n\n|\Z)', help_text, re.S)
    if not m:
        return set()
    return set(re.findall(r'(?:^|;)\s+(\d+)\s', ' ' + squash(m.group(1))))


def sections(man_text):
    """{SECTION NAME: [lines]} of a rendered man page."""
    secs = {}
    cur = None
    for line in man_text.splitlines():
        if re.match(r'^[A-Z][A-Z ]+$', line):
            cur = line.strip()
            secs[cur] = []
        elif cur is not None:
            secs[cur].append(line)
    return secs


def man_options(lines):
    """{option names: description} from the tags of the OPTIONS section."""
    opts = {}
    cur = None
    for line in lines:
        m = re.match(r'^ {7}(-\S.*)$', line)
        if m:
            cur = frozenset(OPT_RE.findall(m.group(1).split('  ')[0]))
            opts[cur] = ''
        elif cur is not None and re.match(r'^ {14}\S', line):
            opts[cur] += ' ' + line
        elif line.strip() and not line.startswith(' ' * 14):
            cur = None
    return {k: squash(v) for k, v in opts.items()}


def exit_codes_man(lines):
    return set(m.group(1) for l in lines for m in [re.match(r'^ {7}(\d+)\s', l)] if m)


def compare(help_text, version_text, man_text):
    errs = []
    secs = sections(man_text)
    if 'OPTIONS' not in secs or 'EXIT STATUS' not in secs:
        return ['the man page has no OPTIONS or no EXIT STATUS section'], ''
    hopts = help_options(help_text)
    mopts = man_options(secs['OPTIONS'])
    if not hopts:
        errs.append('no option found in --help')
    hnames = {n for k in hopts for n in k}
    mnames = {n for k in mopts for n in k}
    for n in sorted(hnames - mnames):
        errs.append('option %s is in --help but not in the man page' % n)
    for n in sorted(mnames - hnames):
        errs.append('option %s is in the man page but not in --help' % n)
    for k in hopts:
        if k not in mopts and k <= mnames:
            errs.append('options %s are one entry in --help, not in the man page'
                        % '/'.join(sorted(k)))
    for k, text in hopts.items():
        for d in DEFAULT_RE.findall(text):
            d = squash(d)
            if k in mopts and ('default ' + d) not in mopts[k] and ('default: ' + d) not in mopts[k]:
                errs.append('%s: --help says "default %s", the man page does not'
                            % ('/'.join(sorted(k)), d))
    hcodes = exit_codes_help(help_text)
    mcodes = exit_codes_man(secs['EXIT STATUS'])
    if not hcodes:
        errs.append('no exit status found in --help')
    if hcodes != mcodes:
        errs.append('exit codes: --help has %s, the man page %s'
                    % (sorted(hcodes), sorted(mcodes)))
    ver = version_text.split()
    footer = [l for l in man_text.splitlines() if l.strip()][-1:]
    if len(ver) != 2 or not footer or (' '.join(ver)) not in footer[0]:
        errs.append('version: --version says "%s", the man page footer "%s"'
                    % (version_text.strip(), footer[0].strip() if footer else ''))
    summary = '%d options, %d exit codes, version %s: the man page matches --help' % (
        len(hnames), len(hcodes), version_text.strip())
    return errs, summary


def self_test():
    help_text = '''usage: x -p PID

  -p, --pid PID            process
      --rate SIZE          mean bytes (default
                           512K; 1 records all)
  -h, --help               this help

Exit status: 0 ok; 1 could not attach; 2 bad
command line.
'''
    man = '''NAME
       x - y

OPTIONS
       -p PID, --pid PID
              The process.

       --rate SIZE
              Mean bytes (default 512K).

       -h, --help
              Help.

EXIT STATUS
       0      Fine.

       1      Not.

       2      Bad.

x 1.0                 2026-01-01                      X(1)
'''
    errs, _ = compare(help_text, 'x 1.0\n', man)
    assert not errs, errs
    # each kind of drift is caught
    for bad_man, what in [
        (man.replace('       --rate SIZE', '       --rates SIZE'), 'option --rate'),
        (man.replace('default 512K', 'default 1M'), 'default 512K'),
        (man.replace('       2      Bad.', ''), 'exit codes'),
        (man.replace('x 1.0 ', 'x 0.9 '), 'version'),
        (man.replace('       -h, --help', '       -h\n\n       --help'), 'one entry'),
    ]:
        errs, _ = compare(help_text, 'x 1.0\n', bad_man)
        assert any(what in e for e in errs), (what, errs)
    errs, _ = compare(help_text + '  -v, --verbose  more\n', 'x 1.0\n', man)
    assert any('--verbose' in e for e in errs), errs
    print('manopts: self-test ok')


def main():
    if sys.argv[1:] == ['--self-test']:
        self_test()
        return 0
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    texts = []
    for p in sys.argv[1:]:
        with open(p, encoding='utf-8', errors='replace') as f:
            texts.append(f.read())
    errs, summary = compare(*texts)
    for e in errs:
        print('manopts: ' + e)
    if errs:
        return 1
    print('manopts: ' + summary)
    return 0


if __name__ == '__main__':
    sys.exit(main())
