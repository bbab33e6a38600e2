package sts

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFilesReferOneWay draws the package's file-level graph (a file refers to another when it
// uses a name, type, function, method, field or constant declared there; tests left out) and
// fails on a pair of files that refer to each other, or on a longer cycle. A file's references
// point one way, from the stage that handles a request first (decoding, parameters) through the
// commands to the reply and its renderings, so that a reader can take the files in an order where
// each uses only those read before it (doc.go lists them so).
func TestFilesReferOneWay(t *testing.T) {
	graph, err := fileGraph(".")
	if err != nil {
		t.Fatal(err)
	}
	pairs := twoWayPairs(graph)
	t.Logf("%d files, %d two-way pairs", len(graph), len(pairs))
	for _, pair := range pairs {
		a, b, _ := strings.Cut(pair, " ")
		t.Errorf("%s and %s refer to each other: %s uses %s of %s, which uses %s of it", a, b,
			a, strings.Join(graph[a][b], ", "), b, strings.Join(graph[b][a], ", "))
	}
	if len(pairs) == 0 {
		if cycle := fileCycle(graph); cycle != nil {
			t.Errorf("the files refer to each other in a cycle: %s", strings.Join(cycle, " -> "))
		}
	}
}

// fileCycle returns a cycle of files of graph (its first file again at its end), or nil when the
// references between files point one way, as a stack of stages.
func fileCycle(graph map[string]map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(file string) []string
	visit = func(file string) []string {
		state[file] = open
		path = append(path, file)
		for _, next := range slices.Sorted(maps.Keys(graph[file])) {
			switch state[next] {
			case open:
				i := slices.Index(path, next)
				return append(slices.Clone(path[i:]), next)
			case unseen:
				if cycle := visit(next); cycle != nil {
					return cycle
				}
			}
		}
		path = path[:len(path)-1]
		state[file] = done
		return nil
	}
	for _, file := range slices.Sorted(maps.Keys(graph)) {
		if state[file] == unseen {
			if cycle := visit(file); cycle != nil {
				return cycle
			}
		}
	}
	return nil
}

// twoWayPairs returns the pairs of files of graph that refer to each other, sorted.
func twoWayPairs(graph map[string]map[string][]string) []string {
	var pairs []string
	for a, uses := range graph {
		for b := range uses {
			if a < b && len(graph[b][a]) > 0 {
				pairs = append(pairs, a+" "+b)
			}
		}
	}
	slices.Sort(pairs)
	return pairs
}

// fileGraph type-checks the package in dir without its tests and returns, for each file, the
// other files it refers to and the names it uses from each (sorted, once each).
func fileGraph(dir string) (map[string]map[string][]string, error) {
	exports, err := exportData(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, found := exports[path]
		if !found {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	pkg, err := conf.Check("sts", fset, files, info)
	if err != nil {
		return nil, err
	}
	graph := make(map[string]map[string][]string, len(files))
	for _, f := range files {
		graph[filepath.Base(fset.File(f.Pos()).Name())] = map[string][]string{}
	}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		from := filepath.Base(fset.File(id.Pos()).Name())
		to := filepath.Base(fset.File(obj.Pos()).Name())
		if from == to {
			continue
		}
		if !slices.Contains(graph[from][to], obj.Name()) {
			graph[from][to] = append(graph[from][to], obj.Name())
			slices.Sort(graph[from][to])
		}
	}
	return graph, nil
}

// exportData returns the compiled export data of every package the one in dir depends on, by
// import path, as go list builds it.
func exportData(dir string) (map[string]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "="); ok && file != "" {
			exports[path] = file
		}
	}
	return exports, nil
}
