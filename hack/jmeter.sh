#!/usr/bin/env bash
# Prepares a real JMeter for the example plan's test (make jmeter-test): Debian's jmeter and
# jmeter-http packages (JMeter 2.13, installed with apt when missing and running as root), and
# bin/jmeter/jmeter, a wrapper that starts them through hack/jmeter/Launcher.java (see why there).
# Usage: hack/jmeter.sh OUT_DIR; prints nothing but errors, and exits 2 when JMeter is missing and
# cannot be installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: hack/jmeter.sh OUT_DIR}
home=/usr/share/jmeter

need=()
if [ ! -f "$home/bin/ApacheJMeter.jar" ] || [ ! -f "$home/lib/ext/ApacheJMeter_http.jar" ]; then
  need+=(jmeter jmeter-http)
fi
command -v javac >/dev/null || need+=(default-jdk-headless)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "jmeter: missing Debian packages ${need[*]}; install them (apt-get install ${need[*]}) or run as root on Debian" >&2
    exit 2
  fi
  echo "jmeter: installing Debian's ${need[*]}" >&2
  apt-get update -qq
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
# Runs Debian's JMeter 2.13 in non-GUI mode through the project's launcher (hack/jmeter.sh).
exec java -Djmeter.home=$home -cp "$out:$classpath" Launcher "\$@"
WRAPPER
chmod +x "$out/jmeter"
