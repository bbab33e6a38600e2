package faults

import (
	"cmp"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	seedFlag = flag.Uint64("seed", 0, "seed of the clients' and nemeses' choices, to replay a run (0: STS_FAULT_SEED, else from the clock)")
	// cyclesFlag makes a campaign: make faults sets it (STS_FAULT_CYCLES); make test runs each
	// nemesis once.
	cyclesFlag = flag.Int("cycles", 0, "nemesis cycles over all nemeses and backends (0: STS_FAULT_CYCLES, else one per nemesis)")
)

// binary is the sts command the tests run: built once by TestMain from this tree, or from the
// commit STS_FAULT_REF names (to show what the harness finds on another version), or the file
// STS_FAULT_BINARY names.
var binary string

// seed is the run's seed, printed at start.
var seed uint64

func TestMain(m *testing.M) {
	flag.Parse()
	seed = *seedFlag
	if seed == 0 {
		seed, _ = strconv.ParseUint(os.Getenv("STS_FAULT_SEED"), 10, 64)
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("faults: seed %d (replay with -seed %d or STS_FAULT_SEED=%d)\n", seed, seed, seed)

	dir, err := os.MkdirTemp("", "sts-faults-bin-")
	if err != nil {
		panic(err)
	}
	binary, err = buildSTS(dir)
	if err != nil {
		panic(err)
	}
	started := time.Now()
	code := m.Run()
	figures.print(os.Stdout, time.Since(started))
	if path := os.Getenv("STS_FAULT_REPORT"); path != "" {
		if err := writeReport(path, code, time.Since(started)); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// writeReport writes the campaign's figures to path (make faults: docs/faults.md), with what
// they were measured on, so that docs/guarantees.md cites a run instead of copying it. A failed
// campaign's report says it failed.
func writeReport(path string, code int, elapsed time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fault campaign: the figures of the last `make faults`\n\n")
	fmt.Fprintf(&b, "Written by `make faults` (test/faults, `STS_FAULT_REPORT`); do not edit. ")
	fmt.Fprintf(&b, "[guarantees.md](guarantees.md) says what each fault does and which promise each column checks.\n\n")
	result := "every test passed"
	if code != 0 {
		result = fmt.Sprintf("**FAILED** (go test exit code %d): see the run's output", code)
	}
	fmt.Fprintf(&b, "- result: %s\n", result)
	fmt.Fprintf(&b, "- commit: %s (%s)\n", cmp.Or(os.Getenv("STS_FAULT_COMMIT"), "unknown"), binaryLabel())
	fmt.Fprintf(&b, "- machine: %d cores, %s %s/%s\n", runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	figures.print(&b, elapsed)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// buildSTS builds the sts binary into dir: without the race detector, which would slow the
// servers and change the timings the faults meet, not the clients' code under test.
func buildSTS(dir string) (string, error) {
	if path := os.Getenv("STS_FAULT_BINARY"); path != "" {
		fmt.Printf("faults: testing %s (STS_FAULT_BINARY)\n", path)
		return path, nil
	}
	out := filepath.Join(dir, "sts")
	src := "../../cmd/sts"
	if ref := os.Getenv("STS_FAULT_REF"); ref != "" {
		// git archive, not a checkout: the working tree and its index are left alone. From the
		// repository's root: in the package's directory it would archive that directory only.
		tree := filepath.Join(dir, "src")
		if err := os.Mkdir(tree, 0o755); err != nil {
			return "", err
		}
		if b, err := exec.Command("sh", "-c", "git -C ../.. archive "+strconv.Quote(ref)+" | tar -x -C "+strconv.Quote(tree)).CombinedOutput(); err != nil {
			return "", fmt.Errorf("git archive %s: %v\n%s", ref, err, b)
		}
		fmt.Printf("faults: testing sts at %s (STS_FAULT_REF)\n", ref)
		cmd := exec.Command("go", "build", "-o", out, "./cmd/sts")
		cmd.Dir = tree
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build at %s: %v\n%s", ref, err, b)
		}
		return out, nil
	}
	if b, err := exec.Command("go", "build", "-o", out, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, b)
	}
	return out, nil
}

// campaignCycles is the number of nemesis cycles asked for, 0 outside a campaign.
func campaignCycles() int {
	if *cyclesFlag > 0 {
		return *cyclesFlag
	}
	n, _ := strconv.Atoi(os.Getenv("STS_FAULT_CYCLES"))
	return n
}

// rngFor is a random source for one part of the run (a test, a client, a nemesis), from the
// run's seed and the part's name: the same seed gives each part the same choices, however the
// others' goroutines are scheduled.
func rngFor(name string, n int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", name, n)
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}
