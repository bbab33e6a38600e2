package javaregex

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const testTimeout = time.Second

// javaCases hold Java's answers (java.util.regex on OpenJDK 17, and 19+ for
// \b, see doc.go) for Matcher.find() and Matcher.matches(): TestJavaAgrees asks
// the JDK for them.
var javaCases = []struct {
	pattern, input string
	find, match    bool
}{
	// Back-references, including Java's greedy reading of multi-digit numbers.
	{`(.)\1`, "abccd", true, false},
	{`(.)\1`, "abcd", false, false},
	{`^(a)(b)\2\1$`, "abba", true, true},
	{`(a)\11`, "aa1", true, true},                                    // group 11 does not exist: \1 then '1'
	{`(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10`, "abcdefghijj", true, true}, // group 10 exists
	{`(a)\2`, "a", false, false},                                     // a group that never exists never matches
	{`(a)|\1`, "x", false, false},
	{`(\2two|(one))+`, "oneonetwo", true, true}, // forward reference
	{`(?i)(a)\1`, "aA", true, true},
	// Look-ahead and look-behind.
	{`foo(?=bar)`, "foobar", true, false},
	{`foo(?!bar)`, "foobar", false, false},
	{`(?<=A+)B`, "AAB", true, false},
	{`(?<=A+)B`, "xB", false, false},
	{`(?<!a)b`, "ab", false, false},
	{`(?<=a.*)b`, "axxb", true, false},
	{`(?<=\b)a`, "a", true, true},
	// Atomic groups and possessive quantifiers.
	{`(?>a|ab)c`, "abc", false, false},
	{`(?>ab|a)c`, "abc", true, true},
	{`\w++a`, "aaa", false, false},
	{`\w+a`, "aaa", true, true},
	{`a*+a`, "aaa", false, false},
	{`x?+x`, "x", false, false},
	{`a{1,3}+a`, "aaa", false, false},
	{`a{1,3}+a`, "aaaa", true, true},
	{`(ab)++ab`, "abab", false, false},
	{`a++b`, "aab", true, true},
	{`a{2}+`, "aa", true, true},
	{`a*?b`, "aab", true, true},
	// Case-insensitivity and its scope.
	{`(?i)hello`, "HeLLo", true, true},
	{`(?i:A)a`, "aa", true, true},
	{`(?i:A)a`, "aA", false, false},
	{`a(?i)b|c`, "C", true, true},
	{`(a(?i)b)c`, "aBC", false, false},
	{`(?i)a(?-i)b`, "AB", false, false},
	{`(?i-)a`, "A", true, true},
	{`(?i)[a-z&&[^aeiou]]`, "A", false, false},
	{`(?i)[a-z&&[^aeiou]]`, "B", true, true},
	{`(?i)[^a]`, "A", false, false},
	{`(?i)\p{Lu}`, "a", true, true},
	{`(?i)\p{Lower}`, "A", true, true},
	{`(?iu)é`, "É", true, true},
	// Named groups.
	{`(?<year>\d{4})-\k<year>`, "2024-2024", true, true},
	{`(?<year>\d{4})-\k<year>`, "2024-2025", false, false},
	{`(?<x>a)(b)\2`, "abb", true, true}, // named groups are numbered in order
	{`(?<name>a)(?<other>b)\k<name>`, "aba", true, true},
	// Unicode categories and properties.
	{`\p{Lu}`, "abcD", true, false},
	{`^\p{Lu}+$`, "ÀÉ", true, true},
	{`\pL`, "é", true, true},
	{`\P{L}`, "é", false, false},
	{`\p{IsLu}`, "A", true, true},
	{`\p{IsL}`, "a", true, true},
	{`\p{gc=Lu}`, "A", true, true},
	{`\p{IsLatin}`, "a", true, true},
	{`\p{IsGreek}`, "α", true, true},
	{`\p{sc=latin}`, "a", true, true},
	{`\p{script=LATIN}`, "a", true, true},
	{`\p{IsOld_Italic}`, "\U00010300", true, true},
	{`\p{IsCommon}`, "1", true, true},
	{`\p{IsAlphabetic}`, "é", true, true},
	{`\p{IsAlpha}`, "é", true, true}, // POSIX names after Is are Unicode
	{`\p{Alpha}`, "é", false, false}, // bare POSIX names are ASCII
	{`\p{Alpha}`, "e", true, true},
	{`\p{IsPunct}`, "¡", true, true},
	{`\p{Punct}`, "¡", false, false},
	{`\p{Punct}`, "`", true, true},
	{`\p{IsGraph}`, "a", true, true},
	{`\p{IsAssigned}`, "a", true, true},
	{`\p{C}`, "\u0378", true, true}, // Java's C includes unassigned code points
	{`\p{L1}`, "ÿ", true, true},
	{`\p{LD}`, "1", true, true},
	{`\p{all}`, "a", true, true},
	{`\p{IsWord}`, "_", true, true},
	{`\p{javaLowerCase}`, "a", true, true},
	{`(?i)\p{javaLowerCase}`, "A", true, true},
	{`(?i)\p{IsLowercase}`, "A", true, true},
	{`\p{javaWhitespace}`, "\u00a0", false, false},
	{`\p{javaWhitespace}`, "\x1c", true, true},
	{`(?U)\p{alpha}`, "é", true, true},
	// \Q...\E quotes everything, backslashes too, and may end a range.
	{`\Q.*\E`, "a.*b", true, false},
	{`\Q.*\E`, "ab", false, false},
	{`\Q\d\E`, `\d`, true, true},
	{`\Q\d\E`, "1", false, false},
	{`\Q\\E`, `\`, true, true},
	{`\Qa\E*`, "aaa", true, true}, // the quantifier applies to the last quoted character
	{`[\Qa\E-z]`, "m", true, true},
	{`\Q`, "x", true, false},
	{`(a)\1\Q0\E`, "aa0", true, true},
	// Java's ASCII \w \d \s, also inside classes and negated.
	{`\w`, "é", false, false},
	{`^\w+$`, "azAZ09_", true, true},
	{`\W`, "é", true, true},
	{`\d`, "٣", false, false}, // ARABIC-INDIC DIGIT THREE
	{`\D`, "٣", true, true},
	{`\s`, "\u00a0", false, false},
	{`\s`, "\x0b", true, true},
	{`\S`, "\u00a0", true, true},
	{`[\w&&\D]`, "5", false, false},
	{`[\w&&\D]`, "a", true, true},
	{`[\W\d]`, "5", true, true},
	{`[\W\d]`, "a", false, false},
	{`[^\W\d]`, "5", false, false},
	{`[^\W\d]`, "a", true, true},
	{`[^\W\d]`, "é", false, false},
	{`[\S]`, " ", false, false},
	{`(?U)\w`, "é", true, true},
	{`(?U)\d`, "٣", true, true},
	{`(?U)\s`, "\u00a0", true, true},
	// \b is ASCII too (Java 19+).
	{`\bcat\b`, "a cat!", true, false},
	{`\bcat\b`, "concat", false, false},
	{`x\b`, "xé", true, false},
	{`\Bat`, "cat", true, false},
	{`(?U)\b`, "é", true, false},
	// Horizontal and vertical whitespace.
	{`\h`, "\u00a0", true, true},
	{`\h`, "\n", false, false},
	{`[\h]`, "\u2000", true, true},
	{`\H`, "a", true, true},
	{`\v`, "\x0b", true, true},
	{`[\v]`, "\u2028", true, true},
	{`\V`, "a", true, true},
	{`[\v-\x0c]`, "\x0c", true, true}, // \v starting a range is VT
	// Anchors.
	{`\Aab`, "ab", true, true},
	{`\Aab`, "cab", false, false},
	{`ab\z`, "ab\n", false, false},
	{`ab\Z`, "ab\n", true, false},
	{`a\Z`, "a\u2028", true, false},
	{`\Z`, "\n", true, false},
	{`^\Z`, "\n", true, false},
	{`^$`, "", true, true},
	{`$`, "\n", true, false},
	{`a$`, "a\r", true, false},
	{`a$`, "a\r\n", true, false},
	{`a$`, "a\n\n", false, false},
	{`(?m)a$`, "a\rb", true, false},
	{`(?m)^b`, "a\r\nb", true, false},
	{`(?m)^b`, "a\u2028b", true, false},
	{`(?m)^`, "a\n", true, false},
	{`(?m)^$`, "a\n\n", true, false},
	{`(?m)^`, "", false, false}, // Java's multiline ^ never matches at the end
	{`(?m)$`, "", true, true},
	{`(?d)a$`, "a\n", true, false},
	{`(?d)a$`, "a\r", false, false},
	{`(?dm)a$`, "a\nb", true, false},
	{`(?dm)^b`, "a\rb", false, false},
	{`(?dm)^b`, "a\nb", true, false},
	{`\Gab`, "ab", true, true},
	{`\Gb`, "ab", false, false},
	// . excludes every Java line terminator unless (?s).
	{`a.b`, "a\u0085b", false, false},
	{`a.b`, "a\rb", false, false},
	{`a.b`, "a\u2028b", false, false},
	{`a.b`, "a\tb", true, true},
	{`(?d)a.b`, "a\rb", true, true},
	{`(?s)a.b`, "a\nb", true, true},
	{`^.$`, "😀", true, true}, // one code point
	// Line breaks and graphemes.
	{`\R`, "\r\n", true, true},
	{`\R\n`, "\r\n", true, true}, // \R may give back the \n
	{`^\R$`, "\u2029", true, true},
	{`^\X$`, "e\u0301", true, true},
	// Character classes.
	{`[[:alpha:]]+`, "alpha", true, true}, // the set {: a l p h}, not POSIX
	{`[[:alpha:]]+`, "zebra", true, false},
	{`^[[:alpha:]]+$`, "zebra", false, false},
	{`[a-z&&[^aeiou]]+`, "strength", true, false},
	{`^[a-z&&[^aeiou]]+$`, "strngth", true, true},
	{`^[a-z&&[^aeiou]]+$`, "strength", false, false},
	{`[a-c&&b-d&&c]`, "c", true, true},
	{`[a-c&&b-d&&c]`, "b", false, false},
	{`[[a-c]&&[b-d]&&[c-e]]`, "c", true, true}, // left operands that are intersections
	{`[[a-c]&&[b-d]&&[c-e]]`, "b", false, false},
	{`[^a-c&&b-d&&c]`, "c", false, false},
	{`[^a-c&&b-d&&c]`, "b", true, true},
	{`(?<=[a-c&&b-d&&c])x`, "cx", true, false},
	{`(?<=[a-c&&b-d&&c])x`, "bx", false, false},
	{`[a-c&&[b-d&&c][x]]`, "x", false, false}, // an intersection in a union
	{`[a-c&&[b-d&&c][x]]`, "c", true, true},
	{`[a-z&&[aeiou]xyz]`, "x", true, true}, // Java's right operand: the rest replaces [aeiou]
	{`[^a&&b]`, "a", true, true},           // ^ complements the whole intersection
	{`[^a-z&&b]`, "c", true, true},
	{`[^a-z&&b]`, "b", false, false},
	{`[^a[b]]`, "b", false, false},
	{`[^a[b]]`, "c", true, true},
	{`[ab&&]`, "a", true, true},
	{`[&&a]`, "a", true, true},
	{`[a[b]&&]`, "a", false, false}, // Java intersects with the last nested class
	{`[a[b]&&]`, "b", true, true},
	{`[a&&[b]c]`, "c", false, false},
	{`[a-[bc]]`, "-", true, true},
	{`[a-]`, "-", true, true},
	{`[]a]`, "]", true, true},
	{`[^]a]`, "b", true, true},
	{`[^]a]`, "]", false, false},
	{`[\e-\x20]`, "\x1c", true, true},
	{`[^\x00-\x{10FFFF}]`, "a", false, false},
	{`[😀-😎]`, "😃", true, true},
	{`[.]`, "a", false, false},
	{`[$^]`, "^", true, true},
	{`[a\-z]`, "b", false, false},
	{`[\\]`, `\`, true, true},
	// Character escapes.
	{`\x41`, "A", true, true},
	{`\x{1F600}`, "😀", true, true},
	{`\u0041`, "A", true, true},
	{`\uD83D\uDE00`, "😀", true, true},
	{`\0101`, "A", true, true},
	{`\0400`, " 0", true, true}, // \040 then '0'
	{`\cA`, "\x01", true, true},
	{`\e`, "\x1b", true, true},
	{`\a`, "\x07", true, true},
	{`\t\n\r\f`, "\t\n\r\f", true, true},
	{`\_\@\#`, "_@#", true, true},
	{`\é`, "é", true, true},
	// Comments mode.
	{`(?x)a b`, "ab", true, true},
	{`(?x)a\ b`, "a b", true, true},
	{"(?x)a#c\nb", "ab", true, true},
	{`(?x)[a b]`, " ", false, false},
	{`(?x)[a - z]`, "m", true, true},
	{`(?x)a{2, 3}`, "aa", true, true},
	{`(?x)a {2}`, "aa", true, true},
	{`(?x)a+ +`, "aa", true, true},
	{`(?x)a{1 2}`, strings.Repeat("a", 12), true, true},
	{`(?x)\Q a\E`, " a", true, true},
	// Quantifier corners Java accepts.
	{`{2}`, "", true, true},
	{`a{2}{3}`, "aa", true, true},
	{`^*a`, "a", true, true},
	{`$*`, "", true, true},
	{`(?=a)*b`, "b", true, true},
	{`a{0}`, "", true, true},
	{`a{2,}`, "aaa", true, true},
	// Empty pieces.
	{`(?)a`, "a", true, true},
	{`(?:)`, "", true, true},
	{`()`, "", true, true},
	{`a|`, "b", true, false},
	{`|`, "", true, true},
	{``, "abc", true, false},
	// Literal characters that regexp2 would read differently.
	{`a]`, "a]", true, true},
	{`a}`, "a}", true, true},
	{`#a`, "#a", true, true},
	{`a b`, "a b", true, true},
	{"\x00", "\x00", true, true},
	{`(?c)a`, "a", true, true}, // CANON_EQ is accepted
}

func TestJavaSemantics(t *testing.T) {
	for _, c := range javaCases {
		re, err := Compile(c.pattern, testTimeout)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.pattern, err)
			continue
		}
		if got, err := re.Find(c.input); err != nil || got != c.find {
			t.Errorf("Find(%q, %q) = %v, %v; Java says %v", c.pattern, c.input, got, err, c.find)
		}
		if got, err := re.Match(c.input); err != nil || got != c.match {
			t.Errorf("Match(%q, %q) = %v, %v; Java says %v", c.pattern, c.input, got, err, c.match)
		}
	}
}

// javaRejects are patterns that Java refuses with a PatternSyntaxException.
var javaRejects = []string{
	`(`, `)`, `a)`, `[a`, `[]`, `[^]`, `a[b-a]`, `[a-\d]`, `[a-\v]`,
	`*a`, `a|*`, `(*)`, `x**`, `(?i)*`, `a{`, `a{,2}`, `a{2,1}`, `a{x}`, `{abc}`, `a{2`,
	`\`, `a\`, `\y`, `\E`, `\0`, `\08`, `\x4`, `\x{41`, `\x{110000}`, `\u004`, `\c`, `\k`, `\k<x>`,
	`(?<x>a)\k<y>`, `(?<x>a)(?<x>b)`, `\k<x>(?<x>a)`, `(?<1a>x)`, `(?<a`,
	`(?#comment)a`, `(?P<x>a)`, `(?'x'a)`, `(?(1)a|b)`, `(?$)`, `(?@)`, `(?i-m-s)`, `(?z)`,
	`[\1]`, `[\b]`, `[\A]`, `[\k<x>]`, `\p`, `\p{}`, `\p{Lu`, `\p{Latin}`, `\p{alpha}`, `\p{Xx}`, `\pX`,
	`\p{IsOldItalic}`, `\p{sc=Nope}`, `\p{foo=Lu}`,
}

func TestJavaRejects(t *testing.T) {
	for _, p := range javaRejects {
		if _, err := Compile(p, testTimeout); err == nil {
			t.Errorf("Compile(%q) succeeded; Java rejects it", p)
		} else if !errors.Is(err, errSyntax) {
			t.Errorf("Compile(%q) = %v, want a syntax error", p, err)
		}
	}
}

// unsupported are patterns Java accepts that this package refuses rather than
// match differently (doc.go lists them).
var unsupported = []string{
	`\p{InGreek}`, `\p{block=Greek}`, `\p{blk=Greek}`, `\p{IsLatn}`, `\p{sc=Latn}`,
	`\p{javaMirrored}`, `\N{LATIN SMALL LETTER A}`, `\b{g}`,
}

func TestUnsupportedConstructsAreErrors(t *testing.T) {
	for _, p := range unsupported {
		if _, err := Compile(p, testTimeout); !errors.Is(err, errSyntax) {
			t.Errorf("Compile(%q) = %v, want a syntax error", p, err)
		}
	}
}

// Every property name in the tables must be one regexp2 knows, and mean
// what Java means on a character both agree on.
func TestPropertyTables(t *testing.T) {
	samples := map[string]string{ // name -> a character Java puts in it
		"Alpha": "a", "Lower": "a", "Upper": "A", "Digit": "7", "Alnum": "7", "Punct": "!", "Graph": "~",
		"Print": " ", "Blank": "\t", "Cntrl": "\x7f", "XDigit": "f", "Space": "\f", "ASCII": "\x7f",
		"javaLowerCase": "ª", "javaUpperCase": "Ⅰ", "javaTitleCase": "ǅ", "javaAlphabetic": "Ⅰ",
		"javaIdeographic": "中", "javaDigit": "٣", "javaDefined": "a", "javaLetter": "a",
		"javaLetterOrDigit": "٣", "javaSpaceChar": "\u2028", "javaWhitespace": "\u3000",
		"javaISOControl": "\u0085", "javaIdentifierIgnorable": "\u200b", "javaJavaIdentifierStart": "$",
		"javaJavaIdentifierPart": "\u0301", "javaUnicodeIdentifierStart": "℘", "javaUnicodeIdentifierPart": "·",
		"LC": "ǅ", "LD": "5", "L1": "ÿ", "all": "\U0010FFFF", "C": "\U000E0080", "Cn": "\U000E0080",
	}
	for name := range javaProperties {
		sample, ok := samples[name]
		if !ok {
			continue // the categories: checked through regexp2's own table below
		}
		re, err := Compile(`^\p{`+name+`}$`, testTimeout)
		if err != nil {
			t.Errorf(`\p{%s}: %v`, name, err)
			continue
		}
		if got, _ := re.Find(sample); !got {
			t.Errorf(`\p{%s} does not match %q`, name, sample)
		}
	}
	for _, table := range []map[string]charSet{unicodeProperties, posixUnicode, javaProperties} {
		for name, set := range table {
			if _, err := compile(set.pattern()); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

func TestCatastrophicPatternTimesOut(t *testing.T) {
	input := strings.Repeat("a", 40) + "!"
	for _, run := range []func(*Regexp, string) (bool, error){(*Regexp).Find, (*Regexp).Match} {
		re, err := Compile(`(a+)+$`, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run(re, input); !errors.Is(err, ErrTimeout) {
			t.Errorf("match = %v, want ErrTimeout", err)
		}
		// The time limit is spent: every later match times out at once.
		if _, err := run(re, "aaa"); !errors.Is(err, ErrTimeout) {
			t.Errorf(`after a timeout, match("aaa") = %v, want ErrTimeout`, err)
		}
	}
	if strings.Contains(ErrTimeout.Error(), input) {
		t.Error("the timeout error quotes the input")
	}
	// The same pattern answers normally on input that does not explode.
	re, err := Compile(`(a+)+$`, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := re.Find("aaa"); err != nil || !ok {
		t.Errorf(`Find("aaa") = %v, %v`, ok, err)
	}
}

func TestMatchesShareTheTimeLimit(t *testing.T) {
	const limit = 200 * time.Millisecond
	// Lines that each take a fraction of the limit: one match each would never time out, but
	// together they do, as soon as the limit is spent.
	probe, err := Compile(`(a+)+$`, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	var cost time.Duration
	for n := 10; cost < limit/8; n++ {
		line = strings.Repeat("a", n) + "!"
		cost = time.Duration(1<<63 - 1)
		for range 3 { // the least of three runs, so that a pause (a loaded machine) does not count
			start := time.Now()
			if _, err := probe.Find(line); err != nil {
				t.Fatal(err)
			}
			cost = min(cost, time.Since(start))
		}
	}
	re, err := Compile(`(a+)+$`, limit)
	if err != nil {
		t.Fatal(err)
	}
	// A thousand such matches take at least 125 times the limit: the loop must end in a timeout
	// soon after the limit is spent. Timing the loop itself, rather than predicting a count from
	// the probe, holds however the machine's speed changes between the two.
	matches := 0
	start := time.Now()
	for ; matches < 1000; matches++ {
		if _, err := re.Find(line); err != nil {
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("match %d: %v", matches, err)
			}
			break
		}
	}
	took := time.Since(start)
	if matches == 1000 || took > limit+time.Second {
		t.Errorf("%d matches of about %v each ran in %v under a shared limit of %v", matches, cost, took, limit)
	}
}

func TestCompileRefusesCostlyPatterns(t *testing.T) {
	long := strings.Repeat("a", MaxPatternBytes+1)
	if _, err := Compile(long, testTimeout); !errors.Is(err, ErrTooLong) {
		t.Errorf("a pattern of %d bytes: %v, want ErrTooLong", len(long), err)
	}
	if _, err := Compile(long[1:], testTimeout); err != nil {
		t.Errorf("a pattern of %d bytes: %v", MaxPatternBytes, err)
	}
	for pattern, costly := range map[string]bool{
		`(?i)[\x{0}-\x{10FFFF}]`:                                               false,
		"(?i)" + strings.Repeat(`[\x{0}-\uFFFF]`, 32):                          false, // 2 Mi characters
		"(?i)" + strings.Repeat(`[\x{0}-\uFFFF]`, 32) + "[a-b]":                true,
		`(?i)[\x{0}-\x{10FFFF}]{3}[^\x{0}-\uFFFF]`:                             false, // each written once
		`(?i)[\x{0}-\x{10FFFF}]a[^\x{0}-\x{10FFFF}]`:                           true,  // negated or not
		`(?i)[\x{0}-\x{10FFFF}&&[\x{0}-\x{10FFFF}]]`:                           true,
		`(?i:[\x{0}-\x{10FFFF}])[\x{0}-\x{10FFFF}][\x{0}-\x{10FFFF}]`:          false, // only one is case-insensitive
		`[\x{0}-\x{10FFFF}](?i)[a-z](?-i)[\x{0}-\x{10FFFF}][\x{0}-\x{10FFFF}]`: false,
	} {
		_, err := Compile(pattern, testTimeout)
		if costly != errors.Is(err, ErrTooCostly) || !costly && err != nil {
			t.Errorf("%s: %v", pattern, err)
		}
	}
}

func TestDeepBacktrackingIsTooComplex(t *testing.T) {
	re, err := Compile(`(a|b)*c`, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := re.Match(strings.Repeat("ab", 200_000)); !errors.Is(err, ErrTooComplex) {
		t.Errorf("Match = %v, want ErrTooComplex", err)
	}
}

func TestCompileRejectsNoTimeLimit(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := Compile(`a`, d); err == nil {
			t.Errorf("Compile with timeout %v succeeded", d)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	re, err := Compile(`^(\w+)@(\w+)\.com$`, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func() {
			for j := 0; j < 200; j++ {
				if ok, err := re.Match("user@example.com"); !ok || err != nil {
					done <- false
					return
				}
			}
			done <- true
		}()
	}
	for i := 0; i < 8; i++ {
		if !<-done {
			t.Error("a concurrent Match failed")
		}
	}
}
