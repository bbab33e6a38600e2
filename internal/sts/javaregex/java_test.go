package javaregex

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// javaSince are the cases of javaCases whose answer is Java's from a feature version on (doc.go:
// \b follows \w from Java 19); an older JDK must answer otherwise, as doc.go says.
var javaSince = map[[2]string]int{{`x\b`, "xé"}: 19}

// TestJavaAgrees runs every case of javaCases and javaRejects through the JDK's own
// java.util.regex (hack/javaregex/RegexCheck.java), so that the answers the tables call Java's
// are Java's. It needs javac and java: Debian's default-jdk-headless, which CI installs.
func TestJavaAgrees(t *testing.T) {
	for _, tool := range []string{"javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Skip(t, "%s is not installed (Debian: default-jdk-headless): the cases cannot be checked against Java", tool)
		}
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, "../../../hack/javaregex/RegexCheck.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	var in bytes.Buffer
	for _, c := range javaCases {
		fmt.Fprintf(&in, "C %s %s\n", b64(c.pattern), b64(c.input))
	}
	for _, p := range javaRejects {
		fmt.Fprintf(&in, "R %s\n", b64(p))
	}
	run := exec.Command("java", "-cp", classes, "RegexCheck")
	run.Stdin = &in
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("java RegexCheck: %v\n%s", err, stderr.String())
	}
	answers := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(answers) != 1+len(javaCases)+len(javaRejects) {
		t.Fatalf("java RegexCheck answered %d lines for %d cases:\n%s", len(answers)-1, len(javaCases)+len(javaRejects), out)
	}
	version, err := strconv.Atoi(answers[0])
	if err != nil {
		t.Fatalf("java RegexCheck's version line: %q", answers[0])
	}
	for i, c := range javaCases {
		got, want := answers[1+i], fmt.Sprint(c.find, c.match)
		if since := javaSince[[2]string{c.pattern, c.input}]; version < since {
			if got == want {
				t.Errorf("Java %d on %q, %q: find and matches %s, which doc.go says only Java %d answers", version, c.pattern, c.input, got, since)
			}
		} else if got != want {
			t.Errorf("Java %d on %q, %q: find and matches %s; the table says %s", version, c.pattern, c.input, got, want)
		}
	}
	for i, p := range javaRejects {
		if got := answers[1+len(javaCases)+i]; !strings.HasPrefix(got, "rejected") {
			t.Errorf("Java %d %s %q; the table says Java rejects it", version, got, p)
		}
	}
	t.Logf("Java %d agrees on %d cases and %d rejected patterns", version, len(javaCases), len(javaRejects))
}
