package javaregex

import (
	"fmt"
	"strconv"
	"strings"
)

// escape translates a backslash sequence outside a character class.
func (t *translator) escape() error {
	t.pos++
	if t.eof() {
		return t.fail("pattern ends with a lone backslash")
	}
	c := t.src[t.pos]
	t.pos++
	switch c {
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		t.backReference(int(c - '0'))
		return nil
	case 'k':
		return t.namedBackReference()
	case 'A':
		t.emit(`\A`)
	case 'z':
		t.emit(`\z`)
	case 'Z':
		t.emit(t.dollar(false))
	case 'G':
		t.emit(`\G`)
	case 'b':
		if t.at(t.pos) == '{' && t.at(t.pos+1) == 'g' {
			return t.fail(`\b{g} (grapheme boundary) is not supported`)
		}
		t.emit(t.wordBoundary(false))
	case 'B':
		t.emit(t.wordBoundary(true))
	case 'R':
		// Java 9+: \r\n or one vertical-space character; it may backtrack
		// from \r\n to \r.
		t.emit(`(?:\r\n|[\n\x0B\f\r\u0085\u2028\u2029])`)
	case 'X':
		t.emit(`\X`)
	case 'p', 'P':
		set, err := t.propertyEscape(c == 'P')
		t.emit(set.pattern())
		return err
	default:
		if set, ok := t.shorthand(c); ok {
			t.emit(set.pattern())
			return nil
		}
		r, err := t.charEscape(c, false)
		t.emit(literal(r))
		return err
	}
	return nil
}

// charEscape decodes an escape that stands for one character, c being the
// rune after the backslash. inRange is true for the end of a class range,
// where Java reads \v as the VT character.
func (t *translator) charEscape(c rune, inRange bool) (rune, error) {
	switch c {
	case '0':
		return t.octal()
	case 'a':
		return '\a', nil
	case 'e':
		return 0x1B, nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'c':
		if t.eof() {
			return 0, t.fail("illegal control escape sequence")
		}
		t.pos++
		return t.src[t.pos-1] ^ 64, nil
	case 'x':
		return t.hexEscape()
	case 'u':
		return t.unicodeEscape()
	case 'N':
		return 0, t.fail(`\N{name} is not supported`)
	case 'v':
		if inRange {
			return '\v', nil
		}
	}
	if isASCIILetter(c) || isDigit(c) {
		return 0, t.fail("illegal/unsupported escape sequence \\%c", c)
	}
	return c, nil // any other escaped character stands for itself
}

// octal reads the digits of \0n, \0nn or \0mnn (m <= 3).
func (t *translator) octal() (rune, error) {
	isOctal := func(r rune) bool { return r >= '0' && r <= '7' }
	n := t.at(t.pos)
	if !isOctal(n) {
		return 0, t.fail("illegal octal escape sequence")
	}
	t.pos++
	v := n - '0'
	if m := t.at(t.pos); isOctal(m) {
		t.pos++
		v = v*8 + m - '0'
		if o := t.at(t.pos); isOctal(o) && n <= '3' {
			t.pos++
			v = v*8 + o - '0'
		}
	}
	return v, nil
}

// hexEscape reads the digits of \xhh or \x{h...h}.
func (t *translator) hexEscape() (rune, error) {
	if isHex(t.at(t.pos)) && isHex(t.at(t.pos+1)) {
		t.pos += 2
		return hexValue(t.src[t.pos-2 : t.pos]), nil
	}
	if t.at(t.pos) != '{' || !isHex(t.at(t.pos+1)) {
		return 0, t.fail("illegal hexadecimal escape sequence")
	}
	var v rune
	for t.pos++; isHex(t.at(t.pos)); t.pos++ {
		v = v<<4 | hexValue(t.src[t.pos:t.pos+1])
		if v > 0x10FFFF {
			return 0, t.fail("hexadecimal codepoint is too big")
		}
	}
	if t.at(t.pos) != '}' {
		return 0, t.fail("unclosed hexadecimal escape sequence")
	}
	t.pos++
	return v, nil
}

// unicodeEscape reads the digits of \uhhhh. A high surrogate followed by an
// escaped low surrogate makes one code point, as in Java.
func (t *translator) unicodeEscape() (rune, error) {
	read4 := func(at int) (rune, bool) {
		for i := at; i < at+4; i++ {
			if !isHex(t.at(i)) {
				return 0, false
			}
		}
		return hexValue(t.src[at : at+4]), true
	}
	hi, ok := read4(t.pos)
	if !ok {
		return 0, t.fail("illegal Unicode escape sequence")
	}
	t.pos += 4
	if hi >= 0xD800 && hi <= 0xDBFF && t.at(t.pos) == '\\' && t.at(t.pos+1) == 'u' {
		if lo, ok := read4(t.pos + 2); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			t.pos += 6
			return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), nil
		}
	}
	return hi, nil
}

// backReference writes \n. Java reads more digits only while the number still
// names a group opened so far.
func (t *translator) backReference(n int) {
	for isDigit(t.at(t.pos)) {
		next := n*10 + int(t.src[t.pos]-'0')
		if next > t.groups {
			break
		}
		n = next
		t.pos++
	}
	if n > t.groups {
		t.refAhead = true
	}
	if t.totalGroups >= 0 && n > t.totalGroups {
		t.emit("(?!)")
		return
	}
	// \k<n> cannot run into a following literal digit the way \n could.
	t.emit(`\k<`, strconv.Itoa(n), ">")
}

// namedBackReference writes \k<name> as a numbered reference; Java requires
// the group to be defined earlier in the pattern.
func (t *translator) namedBackReference() error {
	if t.at(t.pos) != '<' {
		return t.fail(`\k is not followed by '<' for named capturing group`)
	}
	t.pos++
	name, err := t.groupName()
	if err != nil {
		return err
	}
	n, ok := t.names[name]
	if !ok {
		return t.fail("named capturing group <%s> does not exist", name)
	}
	t.emit(`\k<`, strconv.Itoa(n), ">")
	return nil
}

// Java's line terminators: \n, \r, \r\n, NEL, LINE and PARAGRAPH SEPARATOR.
const terminators = `\n\r\u0085\u2028\u2029`

// dot matches one character; without s, Java excludes every line terminator
// (regexp2's . excludes only \n).
func (t *translator) dot() string {
	switch {
	case t.flags&dotAll != 0:
		return `[\s\S]`
	case t.flags&unixLines != 0:
		return `[^\n]`
	default:
		return `[^` + terminators + `]`
	}
}

// caret is ^. In multiline mode Java matches after any line terminator (not
// between \r and \n) but never at the very end of the input, even an empty one.
func (t *translator) caret() string {
	switch {
	case t.flags&multiline == 0:
		return `\A`
	case t.flags&unixLines != 0:
		return `(?:(?=[\s\S])(?:\A|(?<=\n)))`
	default:
		return `(?:(?=[\s\S])(?:\A|(?<=[\n\u0085\u2028\u2029])|(?<=\r)(?!\n)))`
	}
}

// dollar is $ (and \Z when multi is false). Without multiline, Java matches at
// the end or before a final line terminator, \r\n counting as one; with it,
// before any line terminator except between \r and \n.
func (t *translator) dollar(multi bool) string {
	switch {
	case t.flags&unixLines != 0 && multi:
		return `(?=\n|\z)`
	case t.flags&unixLines != 0:
		return `(?=\n?\z)`
	case multi:
		return `(?:(?<!\r)(?=\n)|(?=[\r\u0085\u2028\u2029])|\z)`
	default:
		return `(?=(?:\r\n|(?<!\r)\n|[\r\u0085\u2028\u2029])?\z)`
	}
}

// wordBoundary is \b (or \B), spelt out with the same word characters as \w:
// ASCII unless the U flag is on.
func (t *translator) wordBoundary(negate bool) string {
	w := t.wordSet().pattern()
	if negate {
		return `(?:(?<=` + w + `)(?=` + w + `)|(?<!` + w + `)(?!` + w + `))`
	}
	return `(?:(?<=` + w + `)(?!` + w + `)|(?<!` + w + `)(?=` + w + `))`
}

// resolveQuotes rewrites every \Q...\E span into escaped literal characters,
// as Pattern.RemoveQEQuoting does before parsing. Quoted text is then literal
// everywhere, inside classes too, and backslashes in it are literal.
func resolveQuotes(p string) string {
	if !strings.Contains(p, `\Q`) {
		return p
	}
	src := []rune(p)
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' || i+1 == len(src) {
			b.WriteRune(src[i])
			continue
		}
		if src[i+1] != 'Q' { // copy the escape whole, so \\Q stays \\ then Q
			b.WriteRune(src[i])
			b.WriteRune(src[i+1])
			i++
			continue
		}
		for i += 2; i < len(src); i++ {
			if src[i] == '\\' && i+1 < len(src) && src[i+1] == 'E' {
				i++
				break
			}
			writeQuoted(&b, src[i])
		}
	}
	return b.String()
}

// writeQuoted writes r so the parser reads it as that literal character:
// letters and non-ASCII as is, digits as \x3N so they cannot extend a
// preceding back-reference, anything else behind a backslash.
func writeQuoted(b *strings.Builder, r rune) {
	switch {
	case r >= 0x80 || isASCIILetter(r):
		b.WriteRune(r)
	case isDigit(r):
		b.WriteString(`\x3`)
		b.WriteRune(r)
	default:
		b.WriteByte('\\')
		b.WriteRune(r)
	}
}

// literal writes r so that regexp2 reads it as that one character, both
// inside and outside a character class.
func literal(r rune) string {
	switch {
	case r < 0x20 || r == 0x7F || (r >= 0xD800 && r <= 0xDFFF):
		return fmt.Sprintf(`\u%04X`, r)
	case r < 0x80 && !isASCIILetter(r) && !isDigit(r) && r != '_': // regexp2 refuses \_
		return `\` + string(r)
	default:
		return string(r)
	}
}

func isDigit(r rune) bool       { return r >= '0' && r <= '9' }
func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
func isHex(r rune) bool         { return isDigit(r) || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' }

func hexValue(digits []rune) rune {
	v, _ := strconv.ParseInt(string(digits), 16, 32)
	return rune(v)
}
