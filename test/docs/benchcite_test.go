package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A figure the documents cite from docs/benchmarks.md names its benchmark: each benchmark they
// name must be one the code has and the report shows (itself or its sub-benchmarks), so that a benchmark renamed or dropped
// does not leave the documents citing a figure nobody measures any more.
func TestCitedBenchmarksExist(t *testing.T) {
	named := regexp.MustCompile(`\bBenchmark[A-Z]\w*`)
	defined := map[string]bool{}
	declared := regexp.MustCompile(`(?m)^func (Benchmark[A-Z]\w*)\(b \*testing\.B\)`)
	for _, file := range goFiles(t) {
		if !strings.HasSuffix(file, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range declared.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
	}
	report, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range []string{"README.md", "docs/scaling.md", "docs/architecture.md", "docs/design.md", "docs/security.md", "docs/testing.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		names := named.FindAllString(string(b), -1)
		slices.Sort(names)
		for _, name := range slices.Compact(names) {
			checked++
			if !defined[name] {
				t.Errorf("%s names %s, which no test file declares", doc, name)
			} else if !strings.Contains(string(report), "### "+name+"\n") && !strings.Contains(string(report), "### "+name+"/") {
				t.Errorf("%s names %s, which docs/benchmarks.md does not show: run make bench", doc, name)
			}
		}
	}
	if checked == 0 || len(defined) == 0 {
		t.Fatalf("%d benchmarks named in the documents, %d declared: the check found nothing to check", checked, len(defined))
	}
	t.Logf("%d benchmark names in the documents, each declared and in docs/benchmarks.md", checked)
}
