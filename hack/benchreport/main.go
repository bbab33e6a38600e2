// Command benchreport writes docs/benchmarks.md from the text output of `go test -bench`
// (make bench): the machine (CPU model, cores, kernel, Go version, load), the date, the commit,
// and for every benchmark each figure it reported, ns/op and the figures of b.ReportMetric
// alike, as the least, the median and the greatest over the rounds of the run (-count). Each
// benchmark measures its ratios against baselines of its own run (a bare net/http handler,
// redis-benchmark on the same redis-server, one resource against 200, ...): the ratio and its
// baseline are figures of the same table, and the benchmark's doc comment, read from its source,
// says what they are.
//
//	go run ./hack/benchreport -o docs/benchmarks.md -rounds 3 rounds.txt guard.txt
//
// The README, docs/scaling.md and docs/design.md cite the file instead of copying figures.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// modulePath is the module's import path; a package's directory is its path without it.
const modulePath = "github.com/sts-operator/sts-operator"

func main() {
	out := flag.String("o", "docs/benchmarks.md", "the file to write")
	rounds := flag.Int("rounds", 0, "the -count of the run, for the report's header (0: not said)")
	commit := flag.String("commit", "", "the commit the run measured (default: git's HEAD here, and whether the tree has changes)")
	started := flag.String("started", "", "when the run began, RFC 3339 (the report gives its length)")
	note := flag.String("note", "", "a line the report's header gives as it is: how the run was made, when not by make bench alone")
	loadStart := flag.String("load-start", "", "the machine's load average when the run began, as /proc/loadavg gives it")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: benchreport [-o docs/benchmarks.md] [-rounds N] go-test-bench-output.txt ...")
		os.Exit(2)
	}
	run := &Run{}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fail(err)
		}
		err = run.Parse(f)
		f.Close()
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
	}
	if len(run.Benchmarks) == 0 {
		fail(fmt.Errorf("no benchmark result in %v", flag.Args()))
	}
	m := thisMachine(run.CPU, *out)
	if *commit != "" {
		m.Commit = *commit
	}
	if *started != "" {
		t, err := time.Parse(time.RFC3339, *started)
		if err != nil {
			fail(fmt.Errorf("-started: %w", err))
		}
		m.Started = t
	}
	m.LoadStart = loadTriple(*loadStart)
	m.Note = *note
	var b strings.Builder
	Write(&b, run, m, *rounds, docComments(run))
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("benchreport: %d benchmarks written to %s\n", len(run.Benchmarks), *out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}

// Run is what a run's output holds: the benchmarks in the order they first ran.
type Run struct {
	CPU        string // the "cpu:" line go test prints
	Benchmarks []*Benchmark
	byKey      map[string]*Benchmark
}

// Benchmark is one benchmark (or sub-benchmark) of one package, with its rounds.
type Benchmark struct {
	Package string
	Name    string // without the -GOMAXPROCS suffix
	Units   []string
	Values  map[string][]float64 // by unit, one value a round
}

var (
	// A result: name, iterations, then value-unit pairs. The name may have been printed on a
	// line of its own, before output the benchmark printed (pendingName).
	resultLine = regexp.MustCompile(`^(Benchmark\S*)?\s+(\d+)((?:\s+[-+0-9.eE]+\s+[^\s\d.+-]\S*)+)\s*$`)
	// A name and no result: the benchmark's own output (a log line) follows on the same line.
	nameOnly   = regexp.MustCompile(`^(Benchmark\S*)(?:\s*$|\s+\D)`)
	procSuffix = regexp.MustCompile(`-\d+$`)
)

// Parse reads go test -bench text output, of one or more packages.
func (r *Run) Parse(in io.Reader) error {
	if r.byKey == nil {
		r.byKey = map[string]*Benchmark{}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	pkg, pending := "", ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg, pending = strings.TrimSpace(strings.TrimPrefix(line, "pkg: ")), ""
			continue
		case strings.HasPrefix(line, "cpu: "):
			r.CPU = strings.TrimSpace(strings.TrimPrefix(line, "cpu: "))
			continue
		}
		m := resultLine.FindStringSubmatch(line)
		if m == nil {
			if n := nameOnly.FindStringSubmatch(line); n != nil {
				pending = n[1]
			}
			continue
		}
		name := m[1]
		if name == "" {
			if pending == "" {
				continue // a line of numbers that a benchmark printed itself
			}
			name = pending
		}
		pending = ""
		if err := r.add(pkg, procSuffix.ReplaceAllString(name, ""), m[3]); err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
	}
	return sc.Err()
}

func (r *Run) add(pkg, name, pairs string) error {
	key := pkg + " " + name
	b := r.byKey[key]
	if b == nil {
		b = &Benchmark{Package: pkg, Name: name, Values: map[string][]float64{}}
		r.byKey[key] = b
		r.Benchmarks = append(r.Benchmarks, b)
	}
	f := strings.Fields(pairs)
	if len(f)%2 != 0 {
		return fmt.Errorf("a value without its unit")
	}
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return err
		}
		unit := f[i+1]
		if _, ok := b.Values[unit]; !ok {
			b.Units = append(b.Units, unit)
		}
		b.Values[unit] = append(b.Values[unit], v)
	}
	return nil
}

// Summary is the least, the median and the greatest of values.
func Summary(values []float64) (lo, median, hi float64) {
	s := slices.Clone(values)
	sort.Float64s(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], median, s[n-1]
}

// Machine describes where the run was made.
type Machine struct {
	CPU, Kernel, Go, Commit, Note string
	Load, LoadStart               string // 1, 5 and 15 minutes: when the report is written, when the run began
	Cores                         int
	Date, Started                 time.Time // Date: when the report is written
}

// thisMachine describes the machine and the tree the run measured; the report's own file, which
// the last run wrote, is no change of the code.
func thisMachine(cpu, report string) Machine {
	// /proc/cpuinfo's model name is fuller than go test's "cpu:" line, which is the fallback.
	m := Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Date: time.Now().UTC()}
	if m.CPU == "unknown" && cpu != "" {
		m.CPU = cpu
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = runtime.GOOS + " " + strings.TrimSpace(string(b))
	} else {
		m.Kernel = runtime.GOOS
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = loadTriple(string(b))
	}
	m.Commit = "unknown"
	if b, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(b))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!"+report).Output(); err == nil && len(st) > 0 {
			m.Commit += " with uncommitted changes"
		}
	}
	return m
}

// loadTriple formats /proc/loadavg's first three fields, "" if it has not them.
func loadTriple(loadavg string) string {
	if f := strings.Fields(loadavg); len(f) >= 3 {
		return strings.Join(f[:3], " / ")
	}
	return ""
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// docComments returns the doc comment of each top-level benchmark of the run, by package and
// name, read from the package's test files (a package outside the module has none).
func docComments(r *Run) map[string]string {
	docs := map[string]string{}
	seen := map[string]bool{}
	for _, b := range r.Benchmarks {
		if seen[b.Package] || !strings.HasPrefix(b.Package, modulePath) {
			continue
		}
		seen[b.Package] = true
		dir := "." + strings.TrimPrefix(b.Package, modulePath)
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		fset := token.NewFileSet()
		for _, name := range files {
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				continue
			}
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Benchmark") && fn.Doc != nil {
					docs[b.Package+" "+fn.Name.Name] = fn.Doc.Text()
				}
			}
		}
	}
	return docs
}

// Write writes the report.
func Write(w io.Writer, r *Run, m Machine, rounds int, docs map[string]string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# Benchmark figures\n\n")
	p("Written by `make bench` (`hack/benchreport`) from one run; not edited by hand: run `make bench`\n")
	p("again to replace it. Each benchmark measures its ratios against baselines of the same run (its\n")
	p("doc comment, quoted, says which); every figure is the least, the median and the greatest over\n")
	p("the rounds. Absolute rates depend on the machine and on what else ran on it: compare ratios.\n\n")
	p("| run | |\n|---|---|\n")
	if !m.Started.IsZero() {
		p("| date | %s to %s (%d min) |\n", m.Started.UTC().Format("2006-01-02 15:04"), m.Date.Format("15:04 MST"), int(m.Date.Sub(m.Started).Minutes()+0.5))
	} else {
		p("| date | %s |\n", m.Date.Format("2006-01-02 15:04 MST"))
	}
	p("| commit | %s |\n", m.Commit)
	p("| CPU | %s |\n", m.CPU)
	p("| cores | %d |\n", m.Cores)
	p("| kernel | %s |\n", m.Kernel)
	p("| Go | %s |\n", m.Go)
	if m.LoadStart != "" {
		p("| load average when the run began (1 / 5 / 15 min) | %s |\n", m.LoadStart)
	}
	if m.Load != "" {
		p("| load average when it ended (1 / 5 / 15 min) | %s |\n", m.Load)
	}
	if m.Note != "" {
		p("| note | %s |\n", m.Note)
	}
	if rounds > 0 {
		p("| rounds | %d (`-count %d`); a benchmark with fewer rounds says so |\n", rounds, rounds)
	}
	p("\n")
	// A package's benchmarks together, the packages in the order they first ran.
	first := map[string]int{}
	for i, b := range r.Benchmarks {
		if _, ok := first[b.Package]; !ok {
			first[b.Package] = i
		}
	}
	ordered := slices.Clone(r.Benchmarks)
	slices.SortStableFunc(ordered, func(a, b *Benchmark) int { return first[a.Package] - first[b.Package] })
	pkg, quoted := "", map[string]bool{}
	for _, b := range ordered {
		if b.Package != pkg {
			pkg = b.Package
			p("## %s\n\n", strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/"))
		}
		p("### %s\n\n", b.Name)
		top, _, _ := strings.Cut(b.Name, "/")
		if doc := docs[b.Package+" "+top]; doc != "" && !quoted[b.Package+" "+top] {
			quoted[b.Package+" "+top] = true
			for line := range strings.Lines(strings.TrimSpace(doc)) {
				if strings.TrimSpace(line) == "" {
					p(">\n")
				} else {
					p("> %s", strings.TrimRight(line, "\n")+"\n")
				}
			}
			p("\n")
		}
		p("| figure | min | median | max | rounds |\n|---|--:|--:|--:|--:|\n")
		for _, unit := range b.Units {
			v := b.Values[unit]
			lo, med, hi := Summary(v)
			p("| %s | %s | %s | %s | %d |\n", unit, format(lo), format(med), format(hi), len(v))
		}
		p("\n")
	}
}

// format prints a figure with three significant digits, or as a whole number from 100.
func format(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a == 0:
		return "0"
	case a >= 0.001:
		return strconv.FormatFloat(v, 'g', 3, 64)
	default:
		return strconv.FormatFloat(v, 'e', 2, 64)
	}
}
