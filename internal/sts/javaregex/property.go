package javaregex

import (
	"strings"
	"unicode"
)

// propertyEscape parses what follows \p or \P: one letter, or a {name}.
func (t *translator) propertyEscape(negate bool) (charSet, error) {
	var name string
	if t.at(t.pos) == '{' {
		end := t.pos + 1
		for end < len(t.src) && t.src[end] != '}' {
			end++
		}
		if end == len(t.src) {
			return charSet{}, t.fail("unclosed character family")
		}
		name = string(t.src[t.pos+1 : end])
		t.pos = end + 1
		if name == "" {
			return charSet{}, t.fail("empty character family")
		}
	} else {
		if t.eof() {
			return charSet{}, t.fail("illegal character family")
		}
		name = string(t.src[t.pos])
		t.pos++
	}
	set, ok := t.property(name)
	if !ok {
		return charSet{}, t.fail("unknown or unsupported character property {%s}", name)
	}
	if negate {
		set = set.complement()
	}
	return set, nil
}

// property resolves a \p name the way Pattern.family does:
//   - sc=, script=, gc=, general_category= (blk= and block=, Unicode
//     blocks, are not supported: Go has no block tables);
//   - In<block>: not supported either;
//   - Is<name>: a binary property, else a category or Java name, else a script;
//   - a bare name: under U a POSIX name in its Unicode meaning, else a
//     category, a POSIX name (ASCII) or a java.lang.Character predicate.
func (t *translator) property(name string) (charSet, bool) {
	if key, value, ok := strings.Cut(name, "="); ok {
		switch strings.ToLower(key) {
		case "sc", "script":
			return script(value)
		case "gc", "general_category":
			set, ok := javaProperties[value]
			return set, ok
		}
		return charSet{}, false
	}
	if strings.HasPrefix(name, "In") {
		return charSet{}, false
	}
	if short, ok := strings.CutPrefix(name, "Is"); ok {
		upper := strings.ToUpper(short)
		if set, ok := unicodeProperties[upper]; ok {
			return set, true
		}
		if set, ok := posixUnicode[upper]; ok {
			return set, true
		}
		if set, ok := javaProperties[short]; ok {
			return set, true
		}
		return script(short)
	}
	if t.flags&unicodeClass != 0 {
		if set, ok := posixUnicode[strings.ToUpper(name)]; ok {
			return set, true
		}
	}
	set, ok := javaProperties[name]
	return set, ok
}

// script looks a script up by its name in any letter case, as
// Character.UnicodeScript.forName does. Four-letter ISO 15924 aliases (Latn)
// are not supported: Go has no table of them.
func script(name string) (charSet, bool) {
	for key := range unicode.Scripts {
		if strings.EqualFold(key, name) {
			return members(`\p{` + key + `}`), true
		}
	}
	return charSet{}, false
}

// The Unicode definitions Java uses for binary properties (\p{IsAlphabetic}),
// for POSIX names under the U flag and for \w \d \s under it, written with the
// categories and properties of Go's unicode tables, which regexp2 knows.
const (
	uAlphabetic  = `\p{L}\p{Nl}\p{Other_Alphabetic}`
	uLowercase   = `\p{Ll}\p{Other_Lowercase}`
	uUppercase   = `\p{Lu}\p{Other_Uppercase}`
	uDigit       = `\p{Nd}`
	uHexDigit    = `\p{Nd}\p{Hex_Digit}`
	uWhiteSpace  = `\p{White_Space}`
	uPunctuation = `\p{P}`
	uWord        = uAlphabetic + `\p{Mn}\p{Me}\p{Mc}\p{Nd}\p{Pc}\p{Join_Control}`
	// Character.isIdentifierIgnorable.
	identifierIgnorable = `\u0000-\u0008\u000E-\u001B\u007F-\u009F\p{Cf}`
)

// unicodeProperties are Java's binary properties, by upper-case name.
var unicodeProperties = map[string]charSet{
	"ALPHABETIC":              members(uAlphabetic),
	"ASSIGNED":                members(`\p{Cn}`).complement(),
	"CONTROL":                 members(`\p{Cc}`),
	"HEXDIGIT":                members(uHexDigit),
	"HEX_DIGIT":               members(uHexDigit),
	"IDEOGRAPHIC":             members(`\p{Ideographic}`),
	"JOINCONTROL":             members(`\p{Join_Control}`),
	"JOIN_CONTROL":            members(`\p{Join_Control}`),
	"LETTER":                  members(`\p{L}`),
	"LOWERCASE":               members(uLowercase),
	"NONCHARACTERCODEPOINT":   members(`\p{Noncharacter_Code_Point}`),
	"NONCHARACTER_CODE_POINT": members(`\p{Noncharacter_Code_Point}`),
	"TITLECASE":               members(`\p{Lt}`),
	"PUNCTUATION":             members(uPunctuation),
	"UPPERCASE":               members(uUppercase),
	"WHITESPACE":              members(uWhiteSpace),
	"WHITE_SPACE":             members(uWhiteSpace),
	"WORD":                    members(uWord),
}

// posixUnicode are the POSIX names in their Unicode meaning, by upper-case name.
var posixUnicode = map[string]charSet{
	"ALPHA":  members(uAlphabetic),
	"LOWER":  members(uLowercase),
	"UPPER":  members(uUppercase),
	"SPACE":  members(uWhiteSpace),
	"PUNCT":  members(uPunctuation),
	"XDIGIT": members(uHexDigit),
	"ALNUM":  members(uAlphabetic + uDigit),
	"CNTRL":  members(`\p{Cc}`),
	"DIGIT":  members(uDigit),
	"BLANK":  members(`\p{Zs}\t`),
	"GRAPH":  members(`\p{Z}\p{Cc}\p{Cs}\p{Cn}`).complement(),
	"PRINT":  members(`\p{Zl}\p{Zp}\p{Cc}\p{Cs}\p{Cn}`).complement(),
}

// javaProperties are the case-sensitive names of CharPredicates.forProperty:
// general categories, Java's extra groupings, ASCII POSIX classes and the
// java.lang.Character predicates (except javaMirrored: Go has no Bidi_Mirrored).
var javaProperties = func() map[string]charSet {
	m := map[string]charSet{
		"C":   members(`\p{C}\p{Cn}`), // Java's C includes unassigned code points, Go's does not
		"Cn":  members(`\p{Cn}`),
		"LC":  members(`\p{Lu}\p{Ll}\p{Lt}`),
		"LD":  members(`\p{L}\p{Nd}`),
		"L1":  members(`\u0000-\u00FF`),
		"all": everything,

		"ASCII":  members(`\u0000-\u007F`),
		"Alnum":  members(`0-9A-Za-z`),
		"Alpha":  members(`A-Za-z`),
		"Blank":  members(` \t`),
		"Cntrl":  members(`\u0000-\u001F\u007F`),
		"Digit":  members(asciiDigit),
		"Graph":  members(literal('!') + "-" + literal('~')),
		"Lower":  members(`a-z`),
		"Print":  members(literal(' ') + "-" + literal('~')),
		"Punct":  members(literal('!') + "-" + literal('/') + literal(':') + "-" + literal('@') + literal('[') + "-" + literal('`') + literal('{') + "-" + literal('~')),
		"Space":  members(asciiSpace),
		"Upper":  members(`A-Z`),
		"XDigit": members(`0-9A-Fa-f`),

		"javaLowerCase":              members(uLowercase),
		"javaUpperCase":              members(uUppercase),
		"javaTitleCase":              members(`\p{Lt}`),
		"javaAlphabetic":             members(uAlphabetic),
		"javaIdeographic":            members(`\p{Ideographic}`),
		"javaDigit":                  members(`\p{Nd}`),
		"javaDefined":                members(`\p{Cn}`).complement(),
		"javaLetter":                 members(`\p{L}`),
		"javaLetterOrDigit":          members(`\p{L}\p{Nd}`),
		"javaSpaceChar":              members(`\p{Z}`),
		"javaWhitespace":             members(`\u0009-\u000D\u001C-\u001F\u0020\u1680\u2000-\u2006\u2008-\u200A\u2028\u2029\u205F\u3000`),
		"javaISOControl":             members(`\u0000-\u001F\u007F-\u009F`),
		"javaIdentifierIgnorable":    members(identifierIgnorable),
		"javaJavaIdentifierStart":    members(`\p{L}\p{Nl}\p{Sc}\p{Pc}`),
		"javaJavaIdentifierPart":     members(`\p{L}\p{Nl}\p{Sc}\p{Pc}\p{Nd}\p{Mc}\p{Mn}` + identifierIgnorable),
		"javaUnicodeIdentifierStart": members(`\p{L}\p{Nl}\p{Other_ID_Start}`),
		"javaUnicodeIdentifierPart":  members(`\p{L}\p{Nl}\p{Pc}\p{Nd}\p{Mc}\p{Mn}\p{Other_ID_Start}\p{Other_ID_Continue}` + identifierIgnorable),
	}
	for _, category := range []string{
		"L", "Lu", "Ll", "Lt", "Lm", "Lo",
		"M", "Mn", "Mc", "Me",
		"N", "Nd", "Nl", "No",
		"P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
		"S", "Sm", "Sc", "Sk", "So",
		"Z", "Zs", "Zl", "Zp",
		"Cc", "Cf", "Co", "Cs",
	} {
		m[category] = members(`\p{` + category + `}`)
	}
	return m
}()
