package sts

import (
	"errors"
	"fmt"
	"strings"
)

// errPercent marks a malformed percent escape. The original's URLDecoder throws on one and the
// connection is dropped; we answer HTTP 400 with a KO body naming the escape instead.
var errPercent = errors.New("malformed percent escape")

// decodePercent decodes raw request text the way the original sees it: the head's bytes are read
// as UTF-8 (one U+FFFD per malformed sequence), then Java's URLDecoder.decode(s, "UTF-8") turns
// '+' into a space and each run of %XX escapes into bytes decoded as UTF-8.
func decodePercent(raw string) (string, error) {
	if !strings.ContainsAny(raw, "%+") {
		return utf8Text.Decode(raw), nil
	}
	s := []rune(utf8Text.Decode(raw))
	var sb strings.Builder
	sb.Grow(len(raw))
	var escaped []byte
	for i := 0; i < len(s); {
		switch s[i] {
		case '+':
			sb.WriteByte(' ')
			i++
		case '%':
			escaped = escaped[:0]
			for i < len(s) && s[i] == '%' {
				if i+2 >= len(s) {
					return "", fmt.Errorf("%w: incomplete trailing escape (%%) pattern", errPercent)
				}
				// Java parses the two characters with Integer.parseInt(s, i+1, i+3, 16), so a
				// sign and non-ASCII digits are accepted as long as the value is not negative.
				hex := string(s[i+1 : i+3])
				v, ok := parseJavaInt(hex, 16)
				if !ok || v < 0 {
					return "", fmt.Errorf("%w: illegal hex characters in escape (%%) pattern %q", errPercent, "%"+hex)
				}
				escaped = append(escaped, byte(v))
				i += 3
			}
			sb.WriteString(utf8Text.Decode(string(escaped)))
		default:
			sb.WriteRune(s[i])
			i++
		}
	}
	return sb.String(), nil
}

// parseQuery adds the parameters of a query string (or of a form body, which the original parses
// the same way) to params, following NanoHTTPD's decodeParms: segments are split on '&' and
// empty ones skipped; the name is the decoded text before the first '=', trimmed; the value is
// the decoded rest, not trimmed, or "" when there is no '='; a repeated name keeps its last value.
func parseQuery(raw string, params map[string]string) error {
	for raw != "" {
		var segment string
		segment, raw, _ = strings.Cut(raw, "&")
		if segment == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(segment, "=")
		name, err := decodePercent(rawName)
		if err != nil {
			return err
		}
		value, err := decodePercent(rawValue)
		if err != nil {
			return err
		}
		params[javaTrim(name)] = value
	}
	return nil
}
