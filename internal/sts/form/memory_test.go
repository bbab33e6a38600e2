package form

import (
	"math"
	"runtime"
	"strings"
	"testing"
)

// TestAdversarialFormDecodingMemory measures what decoding a large form allocates (make
// adversarial prints the figures): the decoded parameters and not a copy of the body, where the
// decoder it replaced (referenceParseForm) made a []rune of it (4 bytes a character) and several
// whole copies.
func TestAdversarialFormDecodingMemory(t *testing.T) {
	const n = 1 << 20
	for _, c := range []struct {
		name, contentType, body string
		decoded                 int // bytes of the parameters' values
	}{
		{"escapes", "", "FILENAME=l&LINE=" + strings.Repeat("%41", n), n + 1},
		{"plain text", "", "FILENAME=l&LINE=" + strings.Repeat("a+b", n), 3*n + 1},
		{"multipart", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"LINE\"\r\n\r\n" + strings.Repeat("a", 3*n) + "\r\n--b--\r\n", 3 * n},
	} {
		// TotalAlloc counts the whole process: the least of five runs leaves out what other
		// goroutines (servers of earlier tests, the runtime) allocated meanwhile.
		allocated := func(parse func()) uint64 {
			least := uint64(math.MaxUint64)
			for range 5 {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				parse()
				runtime.ReadMemStats(&after)
				least = min(least, after.TotalAlloc-before.TotalAlloc)
			}
			return least
		}
		now := allocated(func() {
			if err := ParseBody(c.contentType, c.body, map[string]string{}); err != nil {
				t.Fatal(err)
			}
		})
		was := allocated(func() {
			if err := referenceParseForm(c.contentType, []byte(c.body), map[string]string{}); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s: a %.1f MB body, %.1f MB of values: %.1f MB allocated (%.2fx the values), was %.1f MB (%.2fx)", c.name,
			float64(len(c.body))/1e6, float64(c.decoded)/1e6, float64(now)/1e6, float64(now)/float64(c.decoded), float64(was)/1e6, float64(was)/float64(c.decoded))
		if slack := uint64(256 << 10); now > uint64(c.decoded)+slack {
			t.Errorf("%s: %d bytes allocated to decode %d bytes of values", c.name, now, c.decoded)
		}
	}
}
