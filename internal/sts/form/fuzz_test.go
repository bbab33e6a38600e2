package form

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"unsafe"
)

// FuzzFormDecoding parses any body as a form, as its content type says (url-encoded or
// multipart): the decoder must give the parameters and the errors of the one it replaced
// (referenceParseForm, []rune and whole-body copies), keep none of the body's memory in a name
// or value (a list would keep the whole body for one line), and parse any first part of the body,
// as it does to find a token, without panicking.
func FuzzFormDecoding(f *testing.F) {
	for _, seed := range []struct{ contentType, body string }{
		{"application/x-www-form-urlencoded", "FILENAME=a.txt&LINE=x%zz"},
		{"", "  LINE=caf%C3%A9+au+lait&TOKEN=s3cret&&KEEP \r\n"},
		{"text/plain", "A=%E2%82%41%FF&B=%ED%A0%80&C=%C0%AF&D=%+1%-0%٤١%４Ｏ&E=\xff\xc3x\xed\xa0\x80"},
		{"", "X=%F0%9F%98%80%F0%9F%98" + strings.Repeat("%41", 300) + "%E2%82"}, // runs across escapeRun's buffer
		{"", "X=" + strings.Repeat("%C3%A9", 127) + "%F0%9F%98%80" + strings.Repeat("%C3%A9", 60)},
		{"", "a=%"}, {"", "a=%4"}, {"", "x%😀"}, {"", "%-1=x"}, {"", "a=b%\xc3A"},
		{"multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"LINE\"\r\n\r\na\r\nb\xff\r\n--b--\r\n"},
		{"multipart/form-data; boundary=b", "no boundary here"},
		{"multipart/form-data", "--b\r\n"},
		{"multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data\r\n\r\nunnamed\r\n--b\r\nContent-Disposition: form-data; name=\"TOKEN\"\r\n\r\nt\r\n--b"},
		{"multipart/form-data; boundary=b", "x--b\r\n--b\r\nContent-Disposition: form-data; name=\"A\"\r\n\r\n1\r\n--b\r\nContent-Disposition: form-data; name=\"A\"\r\n\r\n2"},
	} {
		f.Add(seed.contentType, seed.body)
	}
	f.Fuzz(func(t *testing.T, contentType, body string) {
		want := map[string]string{}
		wantErr := referenceParseForm(contentType, []byte(body), want)
		got := map[string]string{}
		gotErr := ParseBody(contentType, body, got)
		switch {
		case (wantErr == nil) != (gotErr == nil) || wantErr != nil && (wantErr.Error() != gotErr.Error() || errors.Is(wantErr, ErrNoBoundary) != errors.Is(gotErr, ErrNoBoundary)):
			t.Fatalf("ParseBody(%q, %q): error %v, want %v", contentType, body, gotErr, wantErr)
		case wantErr == nil && !maps.Equal(got, want):
			t.Fatalf("ParseBody(%q, %q) = %q, want %q", contentType, body, got, want)
		}
		for name, value := range got {
			if sharesMemory(name, body) || sharesMemory(value, body) {
				t.Fatalf("ParseBody(%q, %q): %q=%q is held in the body's memory", contentType, body, name, value)
			}
		}
		for _, n := range []int{len(body) / 3, len(body) / 2, len(body) - 1} {
			if n >= 0 {
				ParseBodyPrefix(contentType, body[:n], map[string]string{})
			}
		}
	})
}

// sharesMemory reports whether a non-empty s lies in the memory of within.
func sharesMemory(s, within string) bool {
	if s == "" || within == "" {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(within)))
	return p >= lo && p < lo+uintptr(len(within))
}
