#!/usr/bin/env bash
# hack/mutate.sh: shows that the checks docs/testing.md lists can fail. Each
# hack/mutations/NAME.patch breaks one property of the code on purpose; its header names the
# package and the tests (-run) that must then fail, and any environment they need:
#
#   # package: ./internal/sts/
#   # run: ^TestFindRegexLimitBoundsTheRequest$
#   # env: STS_TEST_BACKEND=redis        (optional)
#   # flags: -race                       (optional: go test's flags)
#
# For each patch the script copies the tree (without bin/, .git, caches), applies the patch
# there, runs those tests, and reports the mutation killed (the tests failed) or SURVIVED. It
# fails when a mutation survives, no longer applies (the code moved: the patch must follow) or
# does not compile.
# The working tree is never touched. Usage: hack/mutate.sh [NAME.patch ...] (all by default);
# MUTATE_SRC=dir mutates a copy of dir instead of this tree.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=${MUTATE_SRC:-$repo}
if [[ $# -gt 0 ]]; then patches=("$@"); else patches=("$repo"/hack/mutations/*.patch); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failed=0
for patch in "${patches[@]}"; do
	patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")
	name=$(basename "$patch" .patch)
	pkg=$(sed -n 's/^# package: //p' "$patch")
	run=$(sed -n 's/^# run: //p' "$patch")
	read -ra env <<<"$(sed -n 's/^# env: //p' "$patch")"
	read -ra flags <<<"$(sed -n 's/^# flags: //p' "$patch")"
	if [[ -z $pkg || -z $run ]]; then
		echo "BROKEN   $name: no '# package:' or '# run:' line"
		failed=1
		continue
	fi
	rm -rf "$work/tree" && mkdir "$work/tree"
	tar -C "$src" --exclude=./bin --exclude=./.git --exclude=./.cache --exclude=./dist -cf - . | tar -C "$work/tree" -xf -
	if ! (cd "$work/tree" && git apply "$patch"); then
		echo "BROKEN   $name: the patch no longer applies"
		failed=1
		continue
	fi
	start=$SECONDS
	if (cd "$work/tree" && env "${env[@]}" go test -count=1 "${flags[@]}" -run "$run" "$pkg" >"$work/out" 2>&1); then
		echo "SURVIVED $name: $pkg -run '$run' passed with the mutation"
		failed=1
	elif grep -q -E '\[(build|setup) failed\]' "$work/out"; then
		# A mutation that does not compile shows nothing about the tests.
		echo "BROKEN   $name: does not compile"
		grep -m3 -E '\.go:[0-9]+' "$work/out" || true
		failed=1
	else
		red=$(grep -o -- '--- FAIL: [^ ]*' "$work/out" | cut -d' ' -f3 | sort -u | paste -sd' ' - || true)
		echo "killed   $name ($((SECONDS - start))s): ${red:-$(grep -m1 -E 'FAIL|panic' "$work/out" || true)}"
	fi
done
exit "$failed"
