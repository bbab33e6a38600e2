#!/usr/bin/env bash
# Checks the dependency step (hack/debian-deps.sh) as it runs on a machine that lacks its
# packages, without removing any package from this one (other runs may be using them): every
# command the packages provide is hidden from PATH (PATH becomes a directory of links to the rest
# of PATH's programs) and their files are looked for under an empty DEBIAN_DEPS_ROOT. For each
# target it checks that:
#   - as another user (setpriv to nobody), the step stops within 10 seconds, exit status 2, with
#     the exact `apt-get install --no-install-recommends ...` line of what is missing, and runs no
#     apt-get; with one package hidden, the line names that package alone (each package in turn);
#   - as root without apt-get, it stops the same way;
#   - as root, it runs one `apt-get update` and one `apt-get install -y --no-install-recommends`
#     of exactly the missing packages, after which each package's commands and files are back; a
#     second run does nothing. The apt-get it runs is a stand-in on the hidden PATH that "installs"
#     a package by putting back stubs of its commands and files;
#   - a failed apt-get update is retried once; a package that apt-get did not bring back is an
#     error naming it.
# And, where this machine has apt-get and its package lists, that Debian has every package of
# every target under that name and can install them together without recommends (apt-get
# install --simulate: nothing installed).
#
# Cheap (seconds, no download), so .ci/run runs it. What it does not do is a real reinstall,
# which downloads what was removed (chromium and chromium-common alone are over 100 MB) and
# would take packages away from whatever else runs on the machine; CI's own first step,
# hack/debian-deps.sh ci on a fresh machine, is that real run.
#
#   hack/debian-deps-check.sh [TARGET...]    (default: every target; as root, Linux, setpriv)
set -euo pipefail
cd "$(dirname "$0")/.."
deps=$PWD/hack/debian-deps.sh
all_targets=(test demo e2e cluster examples-test bench faults ci)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")

[[ $(id -u) == 0 ]] || { echo "debian-deps-check: run it as root (it runs the step as root and, through setpriv, as nobody)" >&2 && exit 1; }
command -v setpriv >/dev/null || { echo "debian-deps-check: needs setpriv (util-linux)" >&2 && exit 1; }

failures=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	failures=$((failures + 1))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

# Every command and file that a package of any target provides.
declare -A hidden=()
packages_of_all=$("$deps" --list ci)
for t in "${all_targets[@]}"; do packages_of_all+=" $("$deps" --list "$t")"; done
read -ra packages_of_all <<<"$(tr ' ' '\n' <<<"$packages_of_all" | awk 'NF && !seen[$0]++' | paste -sd ' ' -)"
for p in "${packages_of_all[@]}"; do
	read -ra provided <<<"$("$deps" --provides "$p")"
	for what in "${provided[@]}"; do hidden[$what]=$p; done
done

# $tmp/bin: the programs of PATH, first one of a name wins, less the hidden ones and apt-get.
mkdir "$tmp/bin"
declare -A linked=()
IFS=: read -ra path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
	[[ -d $dir ]] || continue
	batch=()
	for f in "$dir"/*; do
		name=${f##*/}
		[[ -x $f && ! -d $f && -z ${linked[$name]:-} && -z ${hidden[$name]:-} && $name != apt-get ]] || continue
		linked[$name]=1
		batch+=("$f")
	done
	[[ ${#batch[@]} == 0 ]] || ln -s -t "$tmp/bin" "${batch[@]}"
done
for what in "${!hidden[@]}"; do
	[[ $what == /* || ! -e $tmp/bin/$what ]] || { echo "debian-deps-check: $what is still on the hidden PATH" >&2 && exit 1; }
done

# The stand-in apt-get: logs its arguments to $APT_LOG; `update` fails while $APT_FAIL_UPDATES
# (a file holding a count) is above 0; `install` puts back stubs of each named package's
# commands (in $APT_BIN) and files (under DEBIAN_DEPS_ROOT), unless APT_INSTALLS_NOTHING=1.
mkdir "$tmp/fake"
cat >"$tmp/fake/apt-get" <<'FAKE'
#!/usr/bin/env bash
set -euo pipefail
echo "$*" >>"$APT_LOG"
case $* in
update*)
	n=$(cat "$APT_FAIL_UPDATES" 2>/dev/null || echo 0)
	if ((n > 0)); then
		echo $((n - 1)) >"$APT_FAIL_UPDATES"
		echo "E: a mirror's hiccup (stand-in)" >&2
		exit 100
	fi
	;;
install*)
	[[ ${APT_INSTALLS_NOTHING:-} != 1 ]] || exit 0
	skip=false
	for arg in "${@:2}"; do
		if [[ $skip == true ]]; then skip=false && continue; fi
		[[ $arg != -o ]] || { skip=true && continue; }
		[[ $arg != -* ]] || continue
		read -ra provided <<<"$("$DEPS" --provides "$arg")"
		for what in "${provided[@]}"; do
			if [[ $what == /* ]]; then
				mkdir -p "$DEBIAN_DEPS_ROOT${what%/*}" && : >"$DEBIAN_DEPS_ROOT$what"
			else
				printf '#!/bin/sh\nexit 0\n' >"$APT_BIN/$what" && chmod 755 "$APT_BIN/$what"
			fi
		done
	done
	;;
*) exit 100 ;;
esac
FAKE
chmod 755 "$tmp/fake/apt-get"

# state NAME PACKAGE... makes $tmp/NAME.bin and $tmp/NAME.root, where exactly PACKAGEs are
# installed (stubs of their commands and files, as the stand-in apt-get installs them), and
# empties the apt-get log.
state() {
	local name=$1
	shift
	rm -rf "$tmp/$name.bin" "$tmp/$name.root"
	mkdir -p "$tmp/$name.bin" "$tmp/$name.root"
	chmod 755 "$tmp/$name.bin" "$tmp/$name.root"
	[[ $# == 0 ]] || APT_LOG=/dev/null APT_BIN="$tmp/$name.bin" DEBIAN_DEPS_ROOT="$tmp/$name.root" \
		APT_INSTALLS_NOTHING= DEPS="$deps" "$tmp/fake/apt-get" install "$@"
	: >"$tmp/apt.log"
	chmod 666 "$tmp/apt.log"
	rm -f "$tmp/fail-updates"
}

# run NAME USER APT TARGET runs the step for TARGET in state NAME, as USER (root or nobody), with
# the stand-in apt-get on PATH or none (APT: fake or none); sets status, output and ms (its
# duration in milliseconds).
run() {
	local name=$1 user=$2 apt=$3 target=$4 path="$tmp/$1.bin:$tmp/bin" started
	started=$(date +%s%N)
	[[ $apt == none ]] || path="$tmp/fake:$path"
	local cmd=(env -i "PATH=$path" "DEBIAN_DEPS_ROOT=$tmp/$name.root" "DEBIAN_DEPS_RETRY_DELAY=0"
		"APT_LOG=$tmp/apt.log" "APT_BIN=$tmp/$name.bin" "APT_FAIL_UPDATES=$tmp/fail-updates"
		"APT_INSTALLS_NOTHING=${APT_INSTALLS_NOTHING:-}" "DEPS=$deps" "$deps" "$target")
	[[ $user == root ]] || cmd=(setpriv --reuid=65534 --regid=65534 --clear-groups "${cmd[@]}")
	status=0
	output=$("${cmd[@]}" 2>&1) || status=$?
	ms=$((($(date +%s%N) - started) / 1000000))
}

# back NAME PACKAGE... says which PACKAGEs are not (all) there in state NAME.
back() {
	local name=$1 p what provided gone=()
	shift
	for p in "$@"; do
		read -ra provided <<<"$("$deps" --provides "$p")"
		for what in "${provided[@]}"; do
			if [[ $what == /* ]]; then
				[[ -e $tmp/$name.root$what ]] || { gone+=("$p:$what") && break; }
			else
				[[ -x $tmp/$name.bin/$what ]] || { gone+=("$p:$what") && break; }
			fi
		done
	done
	echo "${gone[*]}"
}

line_of() { echo "  apt-get install --no-install-recommends $*"; }
has_line() { grep -qxF -- "$(line_of "$@")" <<<"$output"; }
# sameset "A B" "B A": the same words, each once.
sameset() { [[ $(tr ' ' '\n' <<<"$1" | sort | paste -sd ' ' -) == $(tr ' ' '\n' <<<"$2" | sort | paste -sd ' ' -) ]]; }

for target in "${targets[@]}"; do
	read -ra everything <<<"$("$deps" --list "$target")"
	read -ra for_users <<<"$("$deps" --list-nonroot "$target")"

	state bare
	run bare nobody fake "$target"
	if [[ $status == 2 && $ms -lt 10000 ]] && has_line "${for_users[@]}" && [[ ! -s $tmp/apt.log ]]; then
		pass "$target: as nobody on a bare machine it stops in ${ms} ms (exit 2) with: $(line_of "${for_users[@]}")"
	else
		fail "$target: as nobody on a bare machine: exit $status after ${ms} ms, apt-get log: $(cat "$tmp/apt.log"), output:"$'\n'"$output"
	fi

	state bare
	run bare root none "$target"
	if [[ $status == 2 && $ms -lt 10000 ]] && has_line "${everything[@]}"; then
		pass "$target: as root without apt-get it stops in ${ms} ms (exit 2) with the apt-get line of all ${#everything[@]} packages"
	else
		fail "$target: as root without apt-get: exit $status after ${ms} ms, output:"$'\n'"$output"
	fi

	state bare
	run bare root fake "$target"
	updates=$(grep -c '^update' "$tmp/apt.log" || true)
	installs=$(grep '^install' "$tmp/apt.log" || true)
	installed=$(tr ' ' '\n' <<<"${installs#install }" | grep -v '^-' | grep -vx 'DPkg::Lock::Timeout=[0-9]*' | paste -sd ' ' -)
	not_back=$(back bare "${everything[@]}")
	if [[ $status == 0 && $updates == 1 && $(wc -l <<<"$installs") == 1 && $installs == *" --no-install-recommends "* && $installs == "install -y "* ]] &&
		sameset "$installed" "${everything[*]}" && [[ -z $not_back ]]; then
		pass "$target: as root it runs apt-get update once and installs the ${#everything[@]} packages; each is back"
	else
		fail "$target: as root: exit $status, updates $updates, installs '$installs', not back: '$not_back', output:"$'\n'"$output"
	fi
	: >"$tmp/apt.log"
	run bare root fake "$target"
	if [[ $status == 0 && -z $output && ! -s $tmp/apt.log ]]; then
		pass "$target: run again, it does nothing"
	else
		fail "$target: run again: exit $status, apt-get log: $(cat "$tmp/apt.log"), output:"$'\n'"$output"
	fi
done

# Each package alone missing (of ci, which has every package): the line names it alone.
read -ra everything <<<"$("$deps" --list ci)"
alone=()
for p in "${everything[@]}"; do
	others=()
	for o in "${everything[@]}"; do [[ $o == "$p" ]] || others+=("$o"); done
	state one "${others[@]}"
	run one nobody fake ci
	if [[ $status == 2 ]] && has_line "$p"; then
		alone+=("$p")
	else
		fail "ci without $p alone, as nobody: exit $status, output:"$'\n'"$output"
	fi
done
[[ ${#alone[@]} == 0 ]] || pass "each of ${#alone[@]} packages missing alone is the only one the line names: ${alone[*]}"

read -ra everything <<<"$("$deps" --list test)"
state retry
echo 1 >"$tmp/fail-updates" && chmod 666 "$tmp/fail-updates"
run retry root fake test
if [[ $status == 0 && $(grep -c '^update' "$tmp/apt.log") == 2 && -z $(back retry "${everything[@]}") ]]; then
	pass "a failed apt-get update is retried once, then the packages are installed"
else
	fail "retry of apt-get update: exit $status, apt-get log: $(cat "$tmp/apt.log"), output:"$'\n'"$output"
fi
state retry
echo 2 >"$tmp/fail-updates" && chmod 666 "$tmp/fail-updates"
run retry root fake test
if [[ $status == 1 && $(grep -c '^update' "$tmp/apt.log") == 2 && $(grep -c '^install' "$tmp/apt.log") == 0 && $output == *"apt-get update failed twice"* ]]; then
	pass "apt-get update failing twice is an error, and nothing is installed"
else
	fail "apt-get update failing twice: exit $status, apt-get log: $(cat "$tmp/apt.log"), output:"$'\n'"$output"
fi
state broken
APT_INSTALLS_NOTHING=1 run broken root fake test
if [[ $status == 1 && $output == *"still missing: "*"chromium (chromium)"* && $output == *"prometheus (promtool prometheus)"* ]]; then
	pass "a package apt-get did not bring back is an error that names it"
else
	fail "apt-get bringing nothing back: exit $status, output:"$'\n'"$output"
fi

# Debian's own answer: every package exists under its name and installs without recommends.
if command -v apt-get >/dev/null && compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
	read -ra everything <<<"$(for t in "${all_targets[@]}"; do "$deps" --list "$t"; done | tr ' ' '\n' | awk '!seen[$0]++' | paste -sd ' ' -)"
	if out=$(apt-get install --simulate --no-install-recommends "${everything[@]}" 2>&1); then
		pass "apt-get install --simulate --no-install-recommends of all ${#everything[@]} packages: Debian has them all"
	else
		fail "apt-get install --simulate of ${everything[*]}:"$'\n'"$out"
	fi
else
	echo "skip apt-get install --simulate: no apt-get, or no package lists (apt-get update)"
fi

if ((failures > 0)); then
	echo "debian-deps-check: $failures failed"
	exit 1
fi
echo "debian-deps-check: all passed"
