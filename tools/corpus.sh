#!/usr/bin/env bash
# tools/corpus.sh DEST — `make corpus`: fetch the dsh conformance corpus from
# the public repositories its files come from, at pinned commits, and lay it
# out under DEST as the tests expect (internal/testcorpus looks for
# .corpus/dsh-corpus). Needs git and the network; shallow fetches of two
# commits, about 30 MB.
#
# What it reproduces:
#   v0/, wire/v0/  byte-exact copies of toninfo/deepseek-harness fixtures at
#                  V0_COMMIT, paths kept.
#   wire/v4/       a byte-exact copy of a zq0929/deepseek-harness fixture at
#                  V4_COMMIT.
#   v4/            zq0929/deepseek-harness fixtures at V4_COMMIT, which have
#                  no seq/time on their event rows (the snapshot harness
#                  strips them). They are put back the way the corpus did:
#                  seq = the row's position among the event rows (what the
#                  fixtures' own seq references assume), time = createdAt +
#                  137 ms × (seq+1), createdAt = 1790000000000 in the header.
#                  Rows keep their bytes otherwise. This is a
#                  re-construction, not dsh's own output: real dsh v4 seq and
#                  time values are not in any public fixture.
# What it cannot: the selection itself is this repository's choice
# (tools/corpus-files.txt); files the source repositories later move or
# change are still fetched as they were at the pinned commits.
#
# Environment: V0_REPO, V4_REPO (and V0_COMMIT, V4_COMMIT) override the
# sources, for a local mirror; the pins above are what the corpus is.
set -euo pipefail
dest=${1:?usage: tools/corpus.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
manifest="$here/corpus-files.txt"

V0_REPO=${V0_REPO:-https://github.com/toninfo/deepseek-harness.git}
V0_COMMIT=${V0_COMMIT:-611615650f1bd789dc83cedc428acc17934614d3}
V4_REPO=${V4_REPO:-https://github.com/zq0929/deepseek-harness.git}
V4_COMMIT=${V4_COMMIT:-5593cc250aae228449197efd2413192165e3377f}
V4_CREATED_AT=1790000000000
V4_STEP_MS=137

command -v git >/dev/null || { echo "make corpus: git is not installed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/dsh-corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT

# fetch NAME URL COMMIT: a shallow, blob-complete fetch of one commit.
fetch() {
	local git_dir="$work/$1.git" log="$work/$1.log"
	git init -q --bare "$git_dir"
	if ! GIT_TERMINAL_PROMPT=0 git --git-dir="$git_dir" fetch -q --depth 1 "$2" "$3" >"$log" 2>&1; then
		echo "make corpus: cannot fetch $2 at $3 (no network, or the host is unreachable): $(tail -1 "$log")" >&2
		echo "make corpus: without the network, point DSH_CORPUS at a copy of the corpus instead" >&2
		exit 1
	fi
}

# v4_seq: put seq and time back on a v4 fixture's event rows (see above).
v4_seq() {
	awk -v created="$V4_CREATED_AT" -v step="$V4_STEP_MS" '
		NR == 1 { sub(/"createdAt":[0-9]+/, "\"createdAt\":" created); print; next }
		$0 == "" { print; next }
		{
			if ($0 ~ /^\{"type":"[^"]*","seq":/) { print "tools/corpus.sh: row " NR " already has a seq" > "/dev/stderr"; exit 1 }
			if (!sub(/^\{"type":"[^"]*"/, "&,\"seq\":" n ",\"time\":" sprintf("%.0f", created + step * (n + 1)))) {
				print "tools/corpus.sh: row " NR " does not start with its type" > "/dev/stderr"; exit 1
			}
			n++
			print
		}' n=0
}

fetch v0 "$V0_REPO" "$V0_COMMIT"
fetch v4 "$V4_REPO" "$V4_COMMIT"

tmp="$dest.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
count=0
while read -r folder path; do
	case "$folder" in ''|'#'*) continue ;; esac
	case "$folder" in
		v0|wire/v0) repo=v0 commit=$V0_COMMIT ;;
		v4|wire/v4) repo=v4 commit=$V4_COMMIT ;;
		*) echo "tools/corpus.sh: unknown folder $folder in $manifest" >&2; exit 1 ;;
	esac
	out="$tmp/$folder/$path"
	mkdir -p "$(dirname "$out")"
	if ! git --git-dir="$work/$repo.git" show "$commit:$path" >"$out.raw" 2>"$work/show.log"; then
		echo "make corpus: $path is not in $repo at $commit: $(tail -1 "$work/show.log")" >&2
		exit 1
	fi
	if [ "$folder" = v4 ]; then v4_seq <"$out.raw" >"$out"; rm "$out.raw"; else mv "$out.raw" "$out"; fi
	count=$((count + 1))
done <"$manifest"
git --git-dir="$work/v0.git" show "$V0_COMMIT:LICENSE" >"$tmp/LICENSE.dsh"
cat >"$tmp/README.md" <<MSG
Fetched by tools/corpus.sh (make corpus): $count dsh session logs from
$V0_REPO at $V0_COMMIT (v0/, wire/v0/) and
$V4_REPO at $V4_COMMIT (v4/, wire/v4/);
v4/ event rows had seq and time re-assigned as tools/corpus.sh describes.
License: LICENSE.dsh (MIT, DeepSeek).
MSG
rm -rf "$dest"
mv "$tmp" "$dest"
echo "make corpus: $count files in $dest"
