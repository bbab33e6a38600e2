#!/usr/bin/env bash
# Prepares the real load generators that run the examples in `make examples-test`: Debian's
# JMeter 2.13 (jmeter, jmeter-http) and Locust (python3-locust), installed with apt when missing
# and running as root, and OUT_DIR/jmeter, a wrapper that starts JMeter through
# hack/jmeter/Launcher.java (see why there).
# Usage: hack/load-tools.sh OUT_DIR. Prints nothing but errors; exits 2 when a tool is missing and
# cannot be installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: hack/load-tools.sh OUT_DIR}
home=/usr/share/jmeter

need=()
if [ ! -f "$home/bin/ApacheJMeter.jar" ] || [ ! -f "$home/lib/ext/ApacheJMeter_http.jar" ]; then
  need+=(jmeter jmeter-http)
fi
command -v javac >/dev/null || need+=(default-jdk-headless)
command -v locust >/dev/null || need+=(python3-locust)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "load-tools: missing Debian packages ${need[*]}; install them (apt-get install ${need[*]}) or run as root on Debian" >&2
    exit 2
  fi
  echo "load-tools: installing Debian's ${need[*]}" >&2
  apt-get update -qq || { sleep 10; apt-get update -qq; } # a mirror hiccup gets one retry
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

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
