package javaregex

// charSet is a set of characters built from Java syntax, in a form regexp2
// can match as one character. Simple sets stay a regexp2 class body, so they
// can be merged and complemented cheaply; unions with complements and
// intersections become expressions over lookaheads, which regexp2 evaluates
// correctly in both directions (so they work inside look-behinds too).
type charSet struct {
	body    string // members inside a regexp2 class: `a-z\p{Lu}`
	negated bool   // the set is everything not in body
	expr    string // if set, an expression matching one character of the set; body and negated are unused
	// ahead, if set, is lookaheads a character must also pass: the set is an
	// intersection. A chain a&&b&&c... appends to it and so stays flat, where
	// nesting each intersection in the next would cost regexp2 time that grows
	// faster than the chain.
	ahead string
}

// everything is the set of all characters.
var everything = charSet{negated: true}

func members(body string) charSet { return charSet{body: body} }

// pattern returns the regexp2 expression that matches one character of s.
func (s charSet) pattern() string {
	switch {
	case s.ahead != "":
		return "(?:" + s.ahead + s.withoutAhead().pattern() + ")"
	case s.expr != "":
		return s.expr
	case s.body == "" && s.negated:
		return `[\s\S]`
	case s.body == "":
		return `(?!)`
	case s.negated:
		return "[^" + s.body + "]"
	default:
		return "[" + s.body + "]"
	}
}

func (s charSet) withoutAhead() charSet {
	s.ahead = ""
	return s
}

// simple reports whether s is only a class body, which merges and complements
// as text.
func (s charSet) simple() bool { return s.expr == "" && s.ahead == "" }

func (s charSet) isEmpty() bool { return s.simple() && s.body == "" && !s.negated }

func (s charSet) complement() charSet {
	if s.simple() {
		s.negated = !s.negated
		return s
	}
	return charSet{expr: `(?:(?!` + s.pattern() + `)[\s\S])`}
}

func union(a, b charSet) charSet {
	switch {
	case a.isEmpty():
		return b
	case b.isEmpty():
		return a
	case a.simple() && b.simple() && !a.negated && !b.negated:
		return members(a.body + b.body)
	default:
		return charSet{expr: "(?:" + a.pattern() + "|" + b.pattern() + ")"}
	}
}

// intersect uses lookaheads rather than regexp2's class subtraction, which
// ignores (?i) on the subtracted part: a character of both sets passes a's
// lookaheads, a itself as a lookahead, b's lookaheads, then matches b.
func intersect(a, b charSet) charSet {
	b.ahead = a.ahead + "(?=" + a.withoutAhead().pattern() + ")" + b.ahead
	return b
}

// Java's predefined classes. Without the U flag \d \w \s are ASCII.
const (
	asciiDigit = `0-9`
	asciiWord  = `a-zA-Z_0-9`
	asciiSpace = ` \t\n\x0B\f\r`
	// \h and \v, the same with or without U.
	horizontalSpace = ` \t\u00A0\u1680\u180E\u2000-\u200A\u202F\u205F\u3000`
	verticalSpace   = `\n\x0B\f\r\u0085\u2028\u2029`
)

// shorthand returns the set of \d \D \w \W \s \S \h \H \v \V.
func (t *translator) shorthand(c rune) (charSet, bool) {
	var s charSet
	switch c {
	case 'd', 'D':
		s = members(asciiDigit)
		if t.flags&unicodeClass != 0 {
			s = members(uDigit)
		}
	case 'w', 'W':
		s = t.wordSet()
	case 's', 'S':
		s = members(asciiSpace)
		if t.flags&unicodeClass != 0 {
			s = members(uWhiteSpace)
		}
	case 'h', 'H':
		s = members(horizontalSpace)
	case 'v', 'V':
		s = members(verticalSpace)
	default:
		return charSet{}, false
	}
	if c >= 'A' && c <= 'Z' {
		s = s.complement()
	}
	return s, true
}

func (t *translator) wordSet() charSet {
	if t.flags&unicodeClass != 0 {
		return members(uWord)
	}
	return members(asciiWord)
}

// class parses a character class at '['.
func (t *translator) class() (charSet, error) { return t.classBody(true) }

// classBody ports Pattern.clazz, quirks included: nested classes are unions;
// "&&" intersects everything before it with what follows (a nested class, or
// the rest of the class up to its ']'); a '^' right after '[' complements the
// whole class; a ']' right after "[" or "[^" is literal. Like Java it keeps
// single Latin-1 characters apart ("bits") until something forces them into
// the union, which decides what "x&&]" intersects with. open is false for the
// right operand of "&&", which has no '[' and leaves the ']' to its caller.
func (t *translator) classBody(open bool) (charSet, error) {
	negated := false
	if open {
		t.pos++
		if t.at(t.pos) == '^' {
			t.pos++
			negated = true
		}
	}
	var prev, curr, bits charSet
	hasPrev, hasBits := false, false
	addPrev := func(s charSet) {
		if hasPrev {
			prev = union(prev, s)
		} else {
			prev, hasPrev = s, true
		}
	}
	flushBits := func() {
		if !hasBits {
			return
		}
		if !hasPrev {
			curr = bits
		}
		addPrev(bits)
		bits, hasBits = charSet{}, false
	}
	for {
		t.skipIgnorable()
		if t.eof() {
			return charSet{}, t.fail("unclosed character class")
		}
		c := t.src[t.pos]
		switch {
		case c == '[':
			nested, err := t.classBody(true)
			if err != nil {
				return charSet{}, err
			}
			curr = nested
			addPrev(nested)
			continue
		case c == '&' && t.at(t.pos+1) == '&':
			t.pos += 2
			var right charSet
			hasRight := false
			for {
				t.skipIgnorable()
				if c := t.at(t.pos); c == ']' || c == '&' || c == -1 {
					break
				}
				if t.src[t.pos] == '[' {
					nested, err := t.classBody(true)
					if err != nil {
						return charSet{}, err
					}
					if hasRight {
						right = union(right, nested)
					} else {
						right, hasRight = nested, true
					}
					continue
				}
				flushBits()
				rest, err := t.classBody(false) // replaces any nested class before it, as in Java
				if err != nil {
					return charSet{}, err
				}
				right, hasRight = rest, true
			}
			flushBits()
			if hasRight {
				curr = right
			}
			switch {
			case hasPrev:
				prev = intersect(prev, curr)
			case hasRight:
				prev, hasPrev = right, true
			default:
				return charSet{}, t.fail("bad class syntax")
			}
			continue
		case c == ']' && (hasPrev || hasBits):
			if open {
				t.pos++
			}
			flushBits()
			if negated {
				return prev.complement(), nil
			}
			return prev, nil
		}
		item, single, err := t.classItem()
		if err != nil {
			return charSet{}, err
		}
		if single {
			bits, hasBits = union(bits, item), true
		} else {
			curr = item
			addPrev(item)
		}
	}
}

// classItem parses one member of a class: a character, a range, or an escape
// that stands for a set. single reports a lone Latin-1 character, which Java
// keeps in its bit set.
func (t *translator) classItem() (set charSet, single bool, err error) {
	var lo rune
	if t.src[t.pos] != '\\' {
		lo = t.src[t.pos]
		t.pos++
	} else {
		t.pos++
		if t.eof() {
			return charSet{}, false, t.fail("unclosed character class")
		}
		c := t.src[t.pos]
		t.pos++
		switch {
		case c == 'p' || c == 'P':
			set, err := t.propertyEscape(c == 'P')
			return set, false, err
		case c == 'v' && t.at(t.pos) == '-':
			lo = '\v' // Java reads \v starting a range as VT
		default:
			if set, ok := t.shorthand(c); ok {
				return set, false, nil
			}
			if lo, err = t.charEscape(c, false); err != nil {
				return charSet{}, false, err
			}
		}
	}
	t.skipIgnorable()
	if t.at(t.pos) == '-' {
		// "a-[" and "a-]" leave the '-' literal; Java looks at the raw next rune.
		if end := t.at(t.pos + 1); end != '[' && end != ']' && end != -1 {
			t.pos++
			t.skipIgnorable()
			hi, err := t.rangeEnd()
			if err != nil {
				return charSet{}, false, err
			}
			if hi < lo {
				return charSet{}, false, t.fail("illegal character range")
			}
			if t.flags&caseInsensitive != 0 {
				if t.folded += int(hi-lo) + 1; t.folded > MaxCaseFoldedChars {
					return charSet{}, false, ErrTooCostly
				}
			}
			return members(literal(lo) + "-" + literal(hi)), false, nil
		}
	}
	return members(literal(lo)), lo < 256, nil
}

// rangeEnd reads the character ending a range.
func (t *translator) rangeEnd() (rune, error) {
	if t.eof() {
		return 0, t.fail("unclosed character class")
	}
	c := t.src[t.pos]
	t.pos++
	if c != '\\' {
		return c, nil
	}
	if t.eof() {
		return 0, t.fail("unclosed character class")
	}
	t.pos++
	return t.charEscape(t.src[t.pos-1], true) // a set such as \d cannot end a range
}
