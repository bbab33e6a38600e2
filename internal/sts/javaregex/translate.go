package javaregex

import (
	"errors"
	"fmt"
	"strconv"
)

// flags are the Java match flags that change how the translator writes a
// pattern, as the inline groups (?idmsxU-idmsxU) set them.
type flags uint8

const (
	caseInsensitive flags = 1 << iota // i: handed to regexp2 as (?i)
	unixLines                         // d: only \n ends a line for . ^ $
	multiline                         // m: ^ and $ match at line ends
	dotAll                            // s: . matches line terminators too
	comments                          // x: whitespace and #-comments are ignored
	unicodeClass                      // U: \w \d \s \b and POSIX names use Unicode
)

// flagLetters maps Java's inline flag letters to flags. u and c are accepted
// and change nothing: regexp2 always folds case by Unicode rules (as Java's
// u), and canonical equivalence (c) is not implemented.
var flagLetters = map[rune]flags{
	'i': caseInsensitive,
	'd': unixLines,
	'm': multiline,
	's': dotAll,
	'x': comments,
	'U': unicodeClass,
	'u': 0,
	'c': 0,
}

// translator rewrites one Java pattern into regexp2's (.NET) syntax. It reads
// the pattern once, the way java.util.regex.Pattern parses it, and writes for
// every Java construct a regexp2 construct with the same meaning. Constructs
// whose meaning differs between the two engines (\w, ., $, classes, ...) are
// spelt out explicitly, so regexp2 only ever sees unambiguous syntax.
type translator struct {
	src    []rune         // the pattern, with \Q...\E already resolved
	pos    int            // next rune of src to read
	out    []byte         // the regexp2 pattern written so far
	flags  flags          // Java flags in effect at pos
	groups int            // capturing groups opened so far; Java numbers them in order
	names  map[string]int // named group -> its number

	// totalGroups is the pattern's group count once a first pass has counted
	// them, else -1. Java compiles a back-reference to a group that does not
	// exist (it never matches); regexp2 refuses one, so the second pass writes
	// (?!) instead.
	totalGroups int
	// refAhead records that a back-reference named a group not opened yet.
	refAhead bool
	// folded counts the characters of the ranges written under the i flag,
	// whose case variants regexp2 looks up one by one (ErrTooCostly).
	folded int
}

// translate returns the regexp2 pattern equivalent to the Java pattern.
func translate(pattern string) (string, error) {
	src := []rune(resolveQuotes(pattern))
	t := &translator{src: src, names: map[string]int{}, totalGroups: -1}
	out, err := t.run()
	if err != nil || !t.refAhead {
		return out, err
	}
	second := &translator{src: src, names: map[string]int{}, totalGroups: t.groups}
	return second.run()
}

func (t *translator) run() (string, error) {
	if err := t.alternation(); err != nil {
		return "", err
	}
	if !t.eof() { // alternation stops early only at a ')' that opens nothing
		return "", t.fail("unmatched closing ')'")
	}
	return string(t.out), nil
}

// errSyntax is wrapped by every error Compile returns for a pattern it cannot use.
var errSyntax = errors.New("javaregex: invalid or unsupported pattern")

func (t *translator) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s at index %d", errSyntax, fmt.Sprintf(format, args...), t.pos)
}

func (t *translator) eof() bool { return t.pos >= len(t.src) }

// at returns the rune at i, or -1 past the end.
func (t *translator) at(i int) rune {
	if i < len(t.src) {
		return t.src[i]
	}
	return -1
}

func (t *translator) emit(s ...string) {
	for _, part := range s {
		t.out = append(t.out, part...)
	}
}

// skipIgnorable skips whitespace and #-comments when the x flag is on. Java
// skips them wherever it looks at the next token, inside classes too.
func (t *translator) skipIgnorable() {
	if t.flags&comments == 0 {
		return
	}
	for !t.eof() {
		switch c := t.src[t.pos]; {
		case isJavaSpace(c):
			t.pos++
		case c == '#':
			for !t.eof() && !t.isLineTerminator(t.src[t.pos]) {
				t.pos++
			}
		default:
			return
		}
	}
}

func isJavaSpace(c rune) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func (t *translator) isLineTerminator(c rune) bool {
	if t.flags&unixLines != 0 {
		return c == '\n'
	}
	return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029'
}

// alternation parses alternatives up to a ')' or the end.
func (t *translator) alternation() error {
	for {
		if err := t.sequence(); err != nil {
			return err
		}
		if t.at(t.pos) != '|' {
			return nil
		}
		t.pos++
		t.emit("|")
	}
}

// atomKind says what an atom left for a following quantifier to act on.
type atomKind int

const (
	quantifiable atomKind = iota
	// nothing is Java's empty atom in front of a stray '{': "{2}" and
	// "a{2}{3}" compile, the second count repeating nothing.
	nothing
	// flagsOnly is an inline flag group, after which Java accepts no quantifier.
	flagsOnly
)

// sequence parses atoms, each with its optional quantifier, up to '|' or ')'.
func (t *translator) sequence() error {
	for {
		t.skipIgnorable()
		if t.eof() {
			return nil
		}
		switch c := t.src[t.pos]; c {
		case '|', ')':
			return nil
		case '*', '+', '?':
			return t.fail("dangling meta character '%c'", c)
		}
		start := len(t.out)
		kind, err := t.atom()
		if err != nil {
			return err
		}
		if kind == flagsOnly {
			continue
		}
		if err := t.quantifier(start, kind); err != nil {
			return err
		}
	}
}

func (t *translator) atom() (atomKind, error) {
	c := t.src[t.pos]
	switch c {
	case '(':
		return t.group()
	case '[':
		set, err := t.class()
		t.emit(set.pattern())
		return quantifiable, err
	case '\\':
		return quantifiable, t.escape()
	case '^':
		t.pos++
		t.emit(t.caret())
	case '$':
		t.pos++
		t.emit(t.dollar(t.flags&multiline != 0))
	case '.':
		t.pos++
		t.emit(t.dot())
	case '{':
		return nothing, nil
	default: // ']' and '}' included: Java takes a dangling one literally
		t.pos++
		t.emit(literal(c))
	}
	return quantifiable, nil
}

// quantifier parses an optional ?, *, +, {n}, {n,} or {n,m}, lazy (?) or
// possessive (+), and applies it to the atom written at out[start:].
func (t *translator) quantifier(start int, kind atomKind) error {
	t.skipIgnorable()
	var q string
	switch c := t.at(t.pos); c {
	case '?', '*', '+':
		t.pos++
		q = string(c)
	case '{':
		var err error
		if q, err = t.counted(); err != nil {
			return err
		}
	default:
		return nil
	}
	t.skipIgnorable()
	possessive := false
	switch t.at(t.pos) {
	case '?':
		t.pos++
		q += "?"
	case '+':
		t.pos++
		possessive = true
	}
	if kind == nothing {
		return nil
	}
	if possessive {
		// A possessive quantifier is an atomic group around the greedy one.
		atom := string(t.out[start:])
		t.out = t.out[:start]
		t.emit("(?>", atom, q, ")")
		return nil
	}
	t.emit(q)
	return nil
}

// counted parses {n}, {n,} or {n,m} and returns it in canonical form.
func (t *translator) counted() (string, error) {
	if !isDigit(t.at(t.pos + 1)) { // Java wants a digit right after '{'
		return "", t.fail("illegal repetition")
	}
	t.pos++
	lo, err := t.repeatCount()
	if err != nil {
		return "", err
	}
	hi, unbounded := lo, false
	if t.at(t.pos) == ',' {
		t.pos++
		t.skipIgnorable()
		if isDigit(t.at(t.pos)) {
			if hi, err = t.repeatCount(); err != nil {
				return "", err
			}
		} else {
			unbounded = true
		}
	}
	if t.at(t.pos) != '}' {
		return "", t.fail("unclosed counted closure")
	}
	t.pos++
	switch {
	case unbounded:
		return "{" + strconv.Itoa(lo) + ",}", nil
	case hi < lo:
		return "", t.fail("illegal repetition range")
	case hi == lo:
		return "{" + strconv.Itoa(lo) + "}", nil
	default:
		return "{" + strconv.Itoa(lo) + "," + strconv.Itoa(hi) + "}", nil
	}
}

// repeatCount reads the digits of a count; with the x flag Java lets
// whitespace separate them.
func (t *translator) repeatCount() (int, error) {
	n := 0
	for isDigit(t.at(t.pos)) {
		n = n*10 + int(t.src[t.pos]-'0')
		if n > 1<<31-1 {
			return 0, t.fail("illegal repetition range")
		}
		t.pos++
		t.skipIgnorable()
	}
	return n, nil
}

// group parses a parenthesised construct at '('.
func (t *translator) group() (atomKind, error) {
	t.pos++
	saved := t.flags
	if t.at(t.pos) != '?' {
		t.groups++
		t.emit("(")
	} else {
		t.pos++
		switch c := t.at(t.pos); c {
		case ':', '=', '!', '>':
			t.pos++
			t.emit("(?", string(c))
		case '<':
			t.pos++
			if c := t.at(t.pos); c == '=' || c == '!' {
				t.pos++
				t.emit("(?<", string(c))
				break
			}
			if err := t.namedGroup(); err != nil {
				return 0, err
			}
		case '$', '@':
			return 0, t.fail("unknown group type")
		default:
			scoped, err := t.inlineFlags()
			if err != nil || !scoped {
				return flagsOnly, err // (?i) lasts to the end of the enclosing group
			}
		}
	}
	if err := t.alternation(); err != nil {
		return 0, err
	}
	if t.at(t.pos) != ')' {
		return 0, t.fail("unclosed group")
	}
	t.pos++
	t.emit(")")
	t.flags = saved
	return quantifiable, nil
}

// namedGroup parses "name>" of (?<name>X). The group becomes a plain
// capturing group, so regexp2 numbers it in Java's order (regexp2 would number
// named groups after all unnamed ones); \k<name> becomes a numbered reference.
func (t *translator) namedGroup() error {
	name, err := t.groupName()
	if err != nil {
		return err
	}
	if _, dup := t.names[name]; dup {
		return t.fail("named capturing group <%s> is already defined", name)
	}
	t.groups++
	t.names[name] = t.groups
	t.emit("(")
	return nil
}

// groupName reads "name>": an ASCII letter, then ASCII letters and digits.
func (t *translator) groupName() (string, error) {
	start := t.pos
	if !isASCIILetter(t.at(t.pos)) {
		return "", t.fail("capturing group name does not start with a Latin letter")
	}
	for isASCIILetter(t.at(t.pos)) || isDigit(t.at(t.pos)) {
		t.pos++
	}
	if t.at(t.pos) != '>' {
		return "", t.fail("named capturing group is missing trailing '>'")
	}
	t.pos++
	return string(t.src[start : t.pos-1]), nil
}

// inlineFlags parses the flags of (?flags) or (?flags:X) after "(?". For the
// scoped form it writes the opening "(?:" and reports scoped.
func (t *translator) inlineFlags() (scoped bool, err error) {
	f, on := t.flags, true
	for ; !t.eof(); t.pos++ {
		c := t.src[t.pos]
		if c == '-' && on {
			on = false
			continue
		}
		bit, ok := flagLetters[c]
		if !ok {
			break
		}
		if on {
			f |= bit
		} else {
			f &^= bit
		}
	}
	switch t.at(t.pos) {
	case ')':
		t.pos++
		t.setFlags(f)
		return false, nil
	case ':':
		t.pos++
		t.emit("(?:")
		t.setFlags(f)
		return true, nil
	}
	return false, t.fail("unknown inline modifier")
}

// setFlags makes f current. Only i reaches regexp2, whose inline (?i) is
// scoped to the enclosing group exactly like Java's; the other flags are
// applied by the translator itself.
func (t *translator) setFlags(f flags) {
	if (f^t.flags)&caseInsensitive != 0 {
		if f&caseInsensitive != 0 {
			t.emit("(?i)")
		} else {
			t.emit("(?-i)")
		}
	}
	t.flags = f
}
