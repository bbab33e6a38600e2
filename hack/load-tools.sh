#!/usr/bin/env bash
# Prepares the real load generators that run the examples in `make examples-test`: Debian's
# JMeter 2.13 and Locust, which make examples-test installs first (hack/debian-deps.sh
# examples-test), and OUT_DIR/jmeter, a wrapper that starts JMeter through
# hack/jmeter/Launcher.java (see why there).
# Usage: hack/load-tools.sh OUT_DIR. Prints nothing but errors.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: hack/load-tools.sh OUT_DIR}
home=/usr/share/jmeter
# The packages: installed (or asked for) here too when this script runs on its own.
hack/debian-deps.sh examples-test

classpath="$home/bin/ApacheJMeter.jar:$home/lib/ext/*:$home/lib/jorphan.jar:$home/lib/*"
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ ! -f "$out/Launcher.class" ] || [ hack/jmeter/Launcher.java -nt "$out/Launcher.class" ]; then
  javac -nowarn -cp "$classpath" -d "$out" hack/jmeter/Launcher.java
fi
cat >"$out/jmeter" <<WRAPPER
#!/bin/sh
# Runs Debian's JMeter 2.13 in non-GUI mode through the project's launcher (hack/load-tools.sh).
exec java -Djmeter.home=$home -cp "$out:$classpath" Launcher "\$@"
WRAPPER
chmod +x "$out/jmeter"
