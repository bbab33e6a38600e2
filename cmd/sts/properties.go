package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
)

// readProperties reads a Java properties file such as JMeter's jmeter.properties. Like Java's
// Properties.load(InputStream), it reads the bytes as ISO-8859-1.
func readProperties(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	latin1, err := datafile.LookupCharset("ISO-8859-1")
	if err != nil {
		return nil, err
	}
	props, err := parseProperties(latin1.Decode(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// parseProperties parses the text of a properties file with the rules of Java's
// Properties.load: '#' and '!' comment lines, keys ended by an unescaped '=', ':' or white
// space, a line ending in an odd number of backslashes continued on the next line (whose
// leading white space is dropped), and the escapes \t \n \r \f \uXXXX and \<char>.
func parseProperties(text string) (map[string]string, error) {
	props := map[string]string{}
	lines := datafile.SplitLines(text) // the same terminators as Java's LineReader: \n, \r\n, \r
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continued(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continued(line) { // a continuation at the end of the file continues nothing
			line = line[:len(line)-1]
		}
		rawKey, rawValue := splitProperty(line)
		key, err := unescapeProperty(rawKey)
		if err != nil {
			return nil, err
		}
		value, err := unescapeProperty(rawValue)
		if err != nil {
			return nil, err
		}
		props[key] = value
	}
	return props, nil
}

// continued reports whether a line ends with an odd number of backslashes.
func continued(line string) bool {
	n := len(line) - len(strings.TrimRight(line, `\`))
	return n%2 == 1
}

// splitProperty splits a logical line at the end of its key: the first unescaped '=', ':' or
// white space, followed by white space and at most one '=' or ':'.
func splitProperty(line string) (key, value string) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte("=: \t\f", line[i]) >= 0 {
			end = i
			break
		}
	}
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return line[:end], rest
}

// unescapeProperty resolves the escapes of a key or value.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var sb strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		if rs[i] != '\\' || i+1 == len(rs) {
			sb.WriteRune(rs[i])
			continue
		}
		i++
		switch rs[i] {
		case 't':
			sb.WriteByte('\t')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 'f':
			sb.WriteByte('\f')
		case 'u':
			if i+4 >= len(rs) {
				return "", fmt.Errorf("malformed \\uxxxx encoding in %q", s)
			}
			v, err := strconv.ParseUint(string(rs[i+1:i+5]), 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx encoding in %q", s)
			}
			sb.WriteRune(rune(v))
			i += 4
		default:
			sb.WriteRune(rs[i])
		}
	}
	return sb.String(), nil
}
