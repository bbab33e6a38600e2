package javaregex

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// ErrTimeout is returned by Find and Match when the matches of a Regexp ran
// out of their time limit, typically through catastrophic backtracking.
var ErrTimeout = errors.New("javaregex: matches exceeded their time limit")

// ErrTooComplex is returned by Find and Match when a match needed more
// backtracking state than the engine allows (regexp2's bounded backtracking
// stack). Java has no such limit; it would fail with a StackOverflowError on
// the same kind of pattern and input.
var ErrTooComplex = errors.New("javaregex: match needs too much backtracking")

// ErrTooLong is returned by Compile, before any other work, for a pattern of
// more than MaxPatternBytes bytes.
var ErrTooLong = fmt.Errorf("javaregex: pattern longer than %d bytes", MaxPatternBytes)

// ErrTooCostly is returned by Compile for a pattern whose character ranges
// under case-insensitive matching hold more than MaxCaseFoldedChars
// characters in all: regexp2 looks up the case variants of each of them one by
// one, so "(?i)[\x{100}-\x{10FFFF}]" costs it tens of milliseconds and a
// short pattern repeating it, seconds.
var ErrTooCostly = fmt.Errorf("javaregex: case-insensitive character ranges of more than %d characters", MaxCaseFoldedChars)

// Bounds on what Compile accepts, so that compiling costs far less than the
// time limit of the matches: the time regexp2 takes to compile grows faster
// than the pattern for deep nesting (16 KiB of nested look-aheads take about
// 0.2 s), and with the width of case-insensitive ranges.
const (
	MaxPatternBytes    = 16 << 10
	MaxCaseFoldedChars = 2 << 20
)

// Regexp is a compiled Java regular expression. It is safe for concurrent use;
// its matches run one at a time, since they share one time limit.
type Regexp struct {
	find  *regexp2.Regexp // the pattern as Matcher.find() runs it
	match *regexp2.Regexp // the same, anchored at both ends, as Matcher.matches() runs it

	mu   sync.Mutex
	left time.Duration // what the matches made so far left of the time limit
}

// Compile compiles a java.util.regex pattern. It returns an error when Java
// would reject the pattern, when the pattern uses a construct this package
// does not support (see the package documentation), or when it is too large
// to compile cheaply (ErrTooLong, ErrTooCostly).
//
// All matches made with the result share one time limit, which must be
// positive: together they stop after about limit, and once it is spent every
// match returns ErrTimeout. So a scan of many lines costs about limit at
// most, however the pattern backtracks on each: compile one Regexp for each
// scan to bound.
func Compile(pattern string, limit time.Duration) (*Regexp, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("javaregex: match time limit must be positive, got %v", limit)
	}
	if len(pattern) > MaxPatternBytes {
		return nil, ErrTooLong
	}
	expr, err := translate(pattern)
	if err != nil {
		return nil, err
	}
	find, err := compile(expr)
	if err != nil {
		return nil, err
	}
	match, err := compile(`\A(?:` + expr + `)\z`)
	if err != nil {
		return nil, err
	}
	return &Regexp{find: find, match: match, left: limit}, nil
}

func compile(expr string) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(expr)
	if err != nil {
		// The translator writes only syntax regexp2 accepts, so this is a
		// construct it passed through (such as a too large repeat count).
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	return re, nil
}

// Find reports whether s contains a match, like Matcher.find().
func (re *Regexp) Find(s string) (bool, error) { return re.run(re.find, s) }

// Match reports whether all of s matches, like Matcher.matches().
func (re *Regexp) Match(s string) (bool, error) { return re.run(re.match, s) }

// run matches s with what is left of the time limit as regexp2's own limit,
// then takes the time the match took from it.
func (re *Regexp) run(engine *regexp2.Regexp, s string) (bool, error) {
	re.mu.Lock()
	defer re.mu.Unlock()
	if re.left <= 0 {
		return false, ErrTimeout
	}
	engine.MatchTimeout = re.left
	start := time.Now()
	ok, err := engine.MatchString(s)
	re.left -= time.Since(start)
	switch {
	case err == nil:
		return ok, nil
	case errors.Is(err, regexp2.ErrBacktrackingStackLimit):
		return false, ErrTooComplex
	default:
		// regexp2's only other match error is its timeout, whose text quotes
		// the whole input; it is not passed on.
		re.left = 0
		return false, ErrTimeout
	}
}
