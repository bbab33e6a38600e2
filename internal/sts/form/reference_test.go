package form

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"strings"
)

// The form decoder as it was before it was made to stream (commit 31ede6f): whole-body copies
// and []rune, but the behaviour the protocol tests were written against. FuzzFormDecoding holds
// the decoder to it, value for value and error for error.

func referenceDecodePercent(raw string) (string, error) {
	if !strings.ContainsAny(raw, "%+") {
		return utf8Text.Decode(raw), nil
	}
	s := []rune(utf8Text.Decode(raw))
	var sb strings.Builder
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
				hex := string(s[i+1 : i+3])
				v, ok := ParseJavaInt(hex, 16)
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

func referenceParseQuery(raw string, params map[string]string) error {
	for raw != "" {
		var segment string
		segment, raw, _ = strings.Cut(raw, "&")
		if segment == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(segment, "=")
		name, err := referenceDecodePercent(rawName)
		if err != nil {
			return err
		}
		value, err := referenceDecodePercent(rawValue)
		if err != nil {
			return err
		}
		params[JavaTrim(name)] = value
	}
	return nil
}

func referenceParseForm(contentType string, body []byte, params map[string]string) error {
	mediaType, _, _ := strings.Cut(contentType, ";")
	if !strings.EqualFold(strings.TrimSpace(mediaType), "multipart/form-data") {
		return referenceParseQuery(JavaTrim(string(body)), params)
	}
	boundary, found := multipartBoundary(contentType)
	if !found {
		return ErrNoBoundary
	}
	if err := referenceParseMultipart(body, boundary, params); err != nil {
		return &MultipartError{Err: err}
	}
	return nil
}

func referenceParseMultipart(body []byte, boundary string, params map[string]string) error {
	if !bytes.Contains(body, []byte("--"+boundary)) {
		return errors.New("the body holds no boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		value, err := io.ReadAll(part)
		if err != nil {
			return err
		}
		if name := part.FormName(); name != "" {
			params[name] = lineBreaks.Replace(utf8Text.Decode(string(value)))
		}
	}
}
