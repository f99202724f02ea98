#!/bin/sh
# check-citations.sh: the repository cites only its own docs.
#
# Fails (exit 1, one line per problem) when a Go file, README, YAML file,
# shell script or Makefile
#   - names a design or format document that is not in the repository;
#   - cites docs/<file>.md when that file does not exist;
#   - cites a section (docs/<file>.md §N, with more sections after a comma,
#     "and", "or" or "/") that is not a numbered heading of that file;
#   - has a bare § citation, which names no document (outside docs/; within
#     docs/ a bare §N is a section of the same file, and format.md §N or
#     design.md §N one of its siblings).
# References of other standards ("RFC 8878 §3.1") are left alone.
#
# Usage: tools/check-citations.sh [ROOT]   (default: the repository root)
#        tools/check-citations.sh --self-test
set -eu
LC_ALL=C
export LC_ALL

# --self-test: run the check on scratch trees made from this repository's
# docs/, one with good citations (must pass) and one with each kind of bad
# citation (must fail, naming each).
if [ "${1:-}" = "--self-test" ]; then
	here=$(cd "$(dirname "$0")/.." && pwd)
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT INT TERM
	for tree in good bad; do
		mkdir -p "$t/$tree/x"
		cp -R "$here/docs" "$t/$tree/docs"
	done
	printf '%s\n' 'package x' '// (docs/format.md §5.1, §5.2 and §11.4; docs/design.md §3)' \
		'// RFC 8878 §3.1' >"$t/good/x/a.go"
	printf '%s\n' 'package x' '// bare (§4.1)' '// (docs/format.md §99)' '// (docs/design.md §3, §42)' \
		'// (docs/nope.md §1)' '// DESIGN §3' '// see dsh-format.md' >"$t/bad/x/a.go"
	sh "$0" "$t/good" >"$t/good.out" 2>&1 || { cat "$t/good.out"; echo "self-test: good tree failed"; exit 1; }
	if sh "$0" "$t/bad" >"$t/bad.out" 2>&1; then
		echo "self-test: bad tree passed"; exit 1
	fi
	for want in 'bare §4.1' 'no section §99' 'no section §42' 'no such file docs/nope.md' \
		'outside the repository: x/a.go:6' 'outside the repository: x/a.go:7'; do
		grep -q -F "$want" "$t/bad.out" || { cat "$t/bad.out"; echo "self-test: missing '$want'"; exit 1; }
	done
	echo "check-citations: self-test ok"
	exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
self=tools/check-citations.sh

if [ ! -d docs ]; then
	echo "check-citations: no docs/ directory in $root" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The files to check.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -co --exclude-standard -- '*.go' '*.md' '*.yaml' '*.yml' '*.sh' 'Makefile' '*/Makefile'
else
	find . -path ./.git -prune -o -type f \( -name '*.go' -o -name '*.md' -o -name '*.yaml' \
		-o -name '*.yml' -o -name '*.sh' -o -name Makefile \) -print | sed 's|^\./||'
fi | grep -v -x -F "$self" | while IFS= read -r f; do
	[ -f "$f" ] && printf '%s\n' "$f"
done >"$tmp/files"

# The sections of each doc: "format.md 5.1" for a heading "### 5.1 …".
for d in docs/*.md; do
	b=${d#docs/}
	sed -n 's/^#\{1,6\} \([0-9][0-9]*\(\.[0-9][0-9]*\)*\)\.\{0,1\} .*/\1/p' "$d" |
		sed "s|^|$b |"
done >"$tmp/sections"
ls docs >"$tmp/docfiles"

status=0

# 1. Documents that live outside the repository.
if xargs grep -n -E 'DESIGN\.md|DESIGN §|dsh-format(\.md)?|collector-notes|real-backends|STYLE\.md|/work/shared|shared/(DESIGN|dsh-format|collector-notes|real-backends|STYLE)' \
	<"$tmp/files" >"$tmp/outside" 2>/dev/null; then
	sed 's/^/check-citations: cites a document outside the repository: /' "$tmp/outside"
	status=1
fi

# 2 and 3. docs/<file>.md paths and § citations.
xargs awk -v sections="$tmp/sections" -v docfiles="$tmp/docfiles" '
BEGIN {
	while ((getline l < sections) > 0) ok[l] = 1
	while ((getline l < docfiles) > 0) exists[l] = 1
	bad = 0
}
function problem(msg) {
	printf "check-citations: %s:%d: %s: %s\n", FILENAME, FNR, msg, $0
	bad = 1
}
{
	line = $0
	indocs = (FILENAME ~ /^docs\//)
	self = FILENAME; sub(/^docs\//, "", self)

	# Every docs/<file>.md named must exist.
	s = line
	while (match(s, /docs\/[A-Za-z0-9_.-]+\.md/)) {
		name = substr(s, RSTART + 5, RLENGTH - 5)
		if (!(name in exists)) problem("no such file docs/" name)
		s = substr(s, RSTART + RLENGTH)
	}

	# Every § citation must name a document and an existing section.
	rest = line; lastdoc = ""
	while ((p = index(rest, "§")) > 0) {
		pre = substr(rest, 1, p - 1)
		post = substr(rest, p + length("§"))
		if (!match(post, /^ ?[0-9]+(\.[0-9]+)*/)) {
			problem("§ without a section number")
			rest = post; lastdoc = ""; continue
		}
		sec = substr(post, RSTART, RLENGTH); sub(/^ /, "", sec)
		rest = substr(post, RLENGTH + 1)
		doc = ""; named = 0
		if (match(pre, /docs\/[A-Za-z0-9_-]+\.md $/)) {
			doc = substr(pre, RSTART + 5, RLENGTH - 6); named = 1
		} else if (indocs && match(pre, /(^|[^A-Za-z0-9_\/-])[A-Za-z0-9_-]+\.md $/)) {
			doc = substr(pre, RSTART, RLENGTH - 1); sub(/^[^A-Za-z0-9_-]/, "", doc)
		} else if (lastdoc != "" && pre ~ /^(, ?| and | or | ?\/ ?)$/) {
			doc = lastdoc
		} else if (pre ~ /RFC ?[0-9]+ $/) {
			lastdoc = ""; continue
		} else if (indocs) {
			doc = self
		} else {
			problem("bare §" sec " (cite docs/<file>.md §" sec ")")
			lastdoc = ""; continue
		}
		lastdoc = doc
		if (!(doc in exists)) {
			if (!named) problem("no such file docs/" doc) # else reported above
			continue
		}
		if (!((doc " " sec) in ok)) problem("docs/" doc " has no section §" sec)
	}
}
END { exit bad }
' <"$tmp/files" || status=1

if [ "$status" -eq 0 ]; then
	n=$(wc -l <"$tmp/files" | tr -d ' ')
	echo "check-citations: ok ($n files, citations of docs/ only)"
fi
exit "$status"
