package redis

import (
	"fmt"
	"regexp"
	"strings"
)

// A script pays, at each call, for every function its text defines: Redis runs the whole chunk,
// and each `local function` makes a closure. Every script starts with the prelude's sixty-odd
// functions, of which it calls a few. newScript sends Redis only the functions a script can
// reach: those its own code names, and those they name in turn.

// luaName is a Lua name, or a keyword, which no function is named.
var luaName = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// shake returns src without the top-level functions it never names: a function is a block from a
// line "local function NAME(" to the first line "end" (both unindented), or that line alone when
// it ends with "end", the way scripts.go is written; everything else is kept as it is. A name in a string keeps its function: too much kept
// costs a closure, too little would be a script that fails.
func shake(src string) string {
	type block struct {
		name string // "" for text outside functions
		text string
	}
	var blocks []block
	lines := strings.SplitAfter(src, "\n")
	for i := 0; i < len(lines); {
		name, isFunc := strings.CutPrefix(lines[i], "local function ")
		if !isFunc {
			blocks = append(blocks, block{text: lines[i]})
			i++
			continue
		}
		name = name[:strings.IndexByte(name, '(')]
		j := i // the block's last line: i for a function of one line
		if !strings.HasSuffix(strings.TrimSpace(lines[i]), " end") {
			j++
			for j < len(lines) && strings.TrimRight(lines[j], "\n") != "end" {
				j++
			}
		}
		blocks = append(blocks, block{name: name, text: strings.Join(lines[i:min(j+1, len(lines))], "")})
		i = j + 1
	}
	needed := map[string]bool{}
	var visit func(text string)
	visit = func(text string) {
		for _, name := range luaName.FindAllString(code(text), -1) {
			if needed[name] {
				continue
			}
			needed[name] = true
			for _, b := range blocks {
				if b.name == name {
					visit(b.text)
				}
			}
		}
	}
	for _, b := range blocks {
		if b.name == "" {
			visit(b.text)
		}
	}
	var out strings.Builder
	for _, b := range blocks {
		if b.name == "" || needed[b.name] {
			out.WriteString(b.text)
		}
	}
	return out.String()
}

// code is text without its comments ("--" to the end of a line). A "--" in a string would hide
// the names after it and drop a function the script calls: code panics on one, when the package's
// scripts are made, so that every test run meets it.
func code(text string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		before, _, comment := strings.Cut(line, "--")
		if !comment {
			continue
		}
		if strings.Count(before, "'")%2 == 1 || strings.Count(before, `"`)%2 == 1 {
			panic(fmt.Sprintf("redis: a script has \"--\" in a string, which shake would take for a comment: %q", line))
		}
		lines[i] = before
	}
	return strings.Join(lines, "\n")
}
