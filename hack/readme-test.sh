#!/usr/bin/env bash
# Runs the README's shell blocks that are marked `<!-- readme-test: NAME ... -->` exactly as a user
# would type them, from the repository root, and checks what they print. Keeps the README honest.
set -euo pipefail
cd "$(dirname "$0")/.."

# block NAME prints the fenced block that follows the marker for NAME.
block() {
  awk -v name="$1" '
    $0 ~ "<!-- readme-test: " name " " { marked = 1; next }
    marked && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' README.md
}

standalone=$(block standalone)
[ -n "$standalone" ] || { echo "readme-test: no block marked standalone in README.md" >&2; exit 1; }
out=$(timeout 300 bash -euo pipefail -c "$standalone" 2>&1) || { echo "$out"; echo "readme-test: the standalone block failed" >&2; exit 1; }
for want in '<title>OK</title>' '"command":"STATUS"' '"name":"logins.csv","length":20'; do
  if ! grep -qF "$want" <<<"$out"; then
    echo "$out"
    echo "readme-test: the standalone block did not print $want" >&2
    exit 1
  fi
done
echo "readme-test: standalone block ok"

redis=$(block redis)
[ -n "$redis" ] || { echo "readme-test: no block marked redis in README.md" >&2; exit 1; }
out=$(timeout 300 bash -euo pipefail -c "$redis" 2>&1) || { echo "$out"; echo "readme-test: the redis block failed" >&2; exit 1; }
for want in '<body>hello</body>' 'world'; do
  if ! grep -qF "$want" <<<"$out"; then
    echo "$out"
    echo "readme-test: the redis block did not print $want" >&2
    exit 1
  fi
done
echo "readme-test: redis block ok"
