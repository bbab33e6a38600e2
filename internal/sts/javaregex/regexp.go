package javaregex

import (
	"errors"
	"fmt"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// ErrTimeout is returned by Find and Match when a match ran out of its time
// limit, typically through catastrophic backtracking.
var ErrTimeout = errors.New("javaregex: match exceeded its time limit")

// ErrTooComplex is returned by Find and Match when a match needed more
// backtracking state than the engine allows (regexp2's bounded backtracking
// stack). Java has no such limit; it would fail with a StackOverflowError on
// the same kind of pattern and input.
var ErrTooComplex = errors.New("javaregex: match needs too much backtracking")

// Regexp is a compiled Java regular expression. It is safe for concurrent use.
type Regexp struct {
	find  *regexp2.Regexp // the pattern as Matcher.find() runs it
	match *regexp2.Regexp // the same, anchored at both ends, as Matcher.matches() runs it
}

// Compile compiles a java.util.regex pattern. It returns an error when Java
// would reject the pattern or when the pattern uses a construct this package
// does not support (see the package documentation). Every match made with the
// result stops after about timeout, which must be positive.
func Compile(pattern string, timeout time.Duration) (*Regexp, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("javaregex: match time limit must be positive, got %v", timeout)
	}
	expr, err := translate(pattern)
	if err != nil {
		return nil, err
	}
	find, err := compile(expr, timeout)
	if err != nil {
		return nil, err
	}
	match, err := compile(`\A(?:`+expr+`)\z`, timeout)
	if err != nil {
		return nil, err
	}
	return &Regexp{find: find, match: match}, nil
}

func compile(expr string, timeout time.Duration) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(expr)
	if err != nil {
		// The translator writes only syntax regexp2 accepts, so this is a
		// construct it passed through (such as a too large repeat count).
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	re.MatchTimeout = timeout
	return re, nil
}

// Find reports whether s contains a match, like Matcher.find().
func (re *Regexp) Find(s string) (bool, error) { return run(re.find, s) }

// Match reports whether all of s matches, like Matcher.matches().
func (re *Regexp) Match(s string) (bool, error) { return run(re.match, s) }

func run(re *regexp2.Regexp, s string) (bool, error) {
	ok, err := re.MatchString(s)
	switch {
	case err == nil:
		return ok, nil
	case errors.Is(err, regexp2.ErrBacktrackingStackLimit):
		return false, ErrTooComplex
	default:
		// regexp2's only other match error is its timeout, whose text quotes
		// the whole input; it is not passed on.
		return false, ErrTimeout
	}
}
