#!/usr/bin/env bash
# The documentation check (ctest docs.check): every relative link in README.md,
# CONTRIBUTING.md and docs/*.md resolves inside the repository (a file, and the heading an
# anchor names; so does a `../NAME.md` in a code span), and every shell command in README.md's code blocks runs, as written, against
# a built tree.
#
#   tools/check-docs.sh [BUILD_DIR]     BUILD_DIR: where vclock, vclockd, libvclock.so and
#                                       libvclock_preload.so were built (default build/dev)
#   tools/check-docs.sh --links-only    only the links (no build needed)
#
# README.md conventions (CONTRIBUTING.md, "Tests"):
#   ```sh blocks run, each as one bash script (set -euo pipefail) in a scratch directory, with
#     BUILD_DIR first in PATH and in the loader's and the compiler's search paths and
#     include/ in the compiler's, as if the tree were installed. Other languages do not run.
#   <!-- not run: REASON --> as the last line before a block: the block is skipped.
#   `# not run: REASON` at the end of a line: that line is skipped.
#   <!-- file: NAME --> as the last line before a block: the block is written to NAME in the
#     scratch directory before any command runs (the README's C and C++ examples).
# Nothing runs as root that a user would not run (sudo lines are marked); no daemon is
# assumed. The scratch directory is removed at the end, a private vclockd's with it.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

links_only=false
build=build/dev
case ${1:-} in
  --links-only) links_only=true ;;
  '') ;;
  *) build=$1 ;;
esac

if ! command -v python3 >/dev/null 2>&1; then
  echo "check-docs: skipped: no python3 (tools/install-deps.sh installs it)"
  exit 77
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/vclock-docs.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# Links, and README.md cut into numbered blocks under $scratch/blocks: NN.sh (a command
# block), NN.skip (the reason a block does not run), files/NAME (a file block).
python3 - "$repo" "$scratch" <<'PY'
import os, re, sys

repo, scratch = sys.argv[1], sys.argv[2]
docs = ["README.md", "CONTRIBUTING.md"] + sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))

fence = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
link = re.compile(r"\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
code_span = re.compile(r"`[^`]*`")

def slug(heading):
    # GitHub's anchors: lower case; letters, digits, '_', '-' and spaces kept; spaces to '-'.
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")

def parse(path):
    """(headings' anchors, links as (line, target), blocks as (line, lang, marker, text))."""
    anchors, links, blocks = set(), [], []
    counts = {}
    lines = open(os.path.join(repo, path), encoding="utf-8").read().split("\n")
    i = 0
    last_text = ""
    while i < len(lines):
        line = lines[i]
        m = fence.match(line)
        if m:
            marker, lang, start = m.group(1), m.group(2), i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            blocks.append((start, lang, last_text.strip(), "\n".join(body) + "\n"))
            last_text = ""
            i += 1
            continue
        h = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if h:
            base = slug(h.group(2))
            n = counts.get(base, 0)
            counts[base] = n + 1
            anchors.add(base if n == 0 else f"{base}-{n}")
        for target in link.findall(code_span.sub("", line)):
            links.append((i + 1, target[1]))
        # A document named in a code span by a path that climbs out of its folder
        # (`../shared/API.md`): checked as a link is, so that none sends a reader outside
        # the repository or to a file it lacks.
        for span in code_span.findall(line):
            if re.match(r"^`\.\./[\w./-]+\.md`$", span):
                links.append((i + 1, span.strip("`")))
        if line.strip():
            last_text = line
        i += 1
    return anchors, links, blocks

parsed = {p: parse(p) for p in docs}
bad = 0
for path in docs:
    for line, target in parsed[path][1]:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:, file:
            continue
        file_part, _, anchor = target.partition("#")
        if file_part:
            resolved = os.path.normpath(os.path.join(repo, os.path.dirname(path), file_part))
            if not (resolved == repo or resolved.startswith(repo + os.sep)):
                print(f"{path}:{line}: link outside the repository: {target}")
                bad += 1
                continue
            if not os.path.exists(resolved):
                print(f"{path}:{line}: no such file: {target}")
                bad += 1
                continue
            relative = os.path.relpath(resolved, repo)
        else:
            relative = path
        if anchor and relative.endswith(".md"):
            anchors = parsed[relative][0] if relative in parsed else parse(relative)[0]
            if anchor not in anchors:
                print(f"{path}:{line}: no heading for #{anchor} in {relative}")
                bad += 1

blocks_dir = os.path.join(scratch, "blocks")
os.makedirs(os.path.join(blocks_dir, "files"))
for n, (line, lang, marker, text) in enumerate(parsed["README.md"][2]):
    name = os.path.join(blocks_dir, f"{n:03d}")
    m = re.match(r"^<!--\s*file:\s*(\S+)\s*-->$", marker)
    if m:
        with open(os.path.join(blocks_dir, "files", m.group(1)), "w") as f:
            f.write(text)
        continue
    if lang not in ("sh", "bash"):
        continue
    m = re.match(r"^<!--\s*not run:\s*(.*?)\s*-->$", marker)
    if m:
        with open(name + ".skip", "w") as f:
            f.write(f"README.md:{line}: {m.group(1)}\n")
        continue
    script = []
    for k, command in enumerate(text.split("\n")):
        r = re.search(r"#\s*not run:\s*(.*)$", command)
        if r:
            print(f"skipped: README.md:{line + k + 1}: {r.group(1)}")
            command = ":"
        script.append(command)
    with open(name + ".sh", "w") as f:
        f.write(f"# README.md:{line}\n" + "\n".join(script))
sys.exit(1 if bad else 0)
PY
echo "check-docs: every relative link resolves"
$links_only && exit 0

build=$(cd "$build" && pwd)
for f in vclock vclockd libvclock.so libvclock_preload.so; do
  if [[ ! -e $build/$f ]]; then
    echo "check-docs: $build/$f is missing: build the tree first" >&2
    exit 1
  fi
done

work=$scratch/work
mkdir -p "$work" "$scratch/tmp" "$scratch/xdg"
chmod 0700 "$scratch/xdg"
cp -r "$scratch/blocks/files/." "$work/"

# The environment of someone who installed the tree: its programs, libraries and headers
# found by name. vclock's own variables are cleared, so that the commands run as written.
run_env=(env -u VCLOCK_PAGE -u VCLOCK_NS -u VCLOCK_DISABLE -u VCLOCK_COUNTER -u VCLOCK_SHIM
  -u VCLOCK_SHIM_STATS -u VCLOCK_TICK_US -u LD_PRELOAD
  PATH="$build:$PATH" LD_LIBRARY_PATH="$build" LIBRARY_PATH="$build" CPATH="$repo/include"
  CPLUS_INCLUDE_PATH="$repo/include" TMPDIR="$scratch/tmp" XDG_RUNTIME_DIR="$scratch/xdg")

failed=0
ran=0
for block in "$scratch"/blocks/*; do
  case $block in
    *.skip) echo "skipped: $(cat "$block")" ;;
    *.sh)
      where=$(head -1 "$block")
      ran=$((ran + 1))
      rc=0
      (cd "$work" && timeout 120 "${run_env[@]}" bash -euo pipefail "$block") \
        >"$scratch/out" 2>&1 || rc=$?
      if ((rc != 0)); then
        echo "FAILED (exit $rc): ${where#\# }"
        sed 's/^/  | /' "$block" | tail -n +2
        echo "  output:"
        sed 's/^/  > /' "$scratch/out" | tail -40
        failed=$((failed + 1))
      else
        echo "ok: ${where#\# }"
      fi
      ;;
  esac
done
if ((failed)); then
  echo "check-docs: $failed of $ran README command blocks failed"
  exit 1
fi
echo "check-docs: $ran README command blocks ran"
