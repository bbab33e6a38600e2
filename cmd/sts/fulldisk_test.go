package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/journal"
	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// httpGet returns the status and body of a GET, or the error as the body.
func httpGet(url string) (int, string) { return httpGetWithin(url, 20*time.Second) }

func httpGetWithin(url string, timeout time.Duration) (int, string) {
	c := http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAdversarialFullDisk runs the server with its dataset and state on a 4 MiB tmpfs and fills
// it: the server stays up, changes (consuming reads included) answer KO 503, reads that change
// nothing answer, /readyz stays OK, SAVE is refused by the reserve; once space returns, changes
// are accepted again by themselves, within three of the journal's retries; after a SIGKILL,
// every acknowledged line is back, once.
func TestAdversarialFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.Skip(t, "needs root to mount a small tmpfs (mount -t tmpfs -o size=4m)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		testutil.Skip(t, "cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	data, state := filepath.Join(mnt, "data"), filepath.Join(mnt, "state")
	for _, d := range []string{data, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--dataset-dir", data, "--state-dir", state, "--min-free-bytes", "1Mi"}
	port := stsproc.FreePort(t)
	srv := launch(t, port, args...)
	srv.WaitReady(t)
	var acked []string
	for i := range 50 {
		line := fmt.Sprintf("before-%d", i)
		if _, body := httpGet(srv.Base + "/sts/ADD?FILENAME=l&LINE=" + line); !strings.Contains(body, "OK") {
			t.Fatalf("ADD %s: %s", line, body)
		}
		acked = append(acked, line)
	}
	// SAVE is refused once it would eat into the reserve: fill down to 768 KiB free.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	_ = syscall.Statfs(mnt, &st)
	chunk := make([]byte, 64<<10)
	for free := int64(st.Bavail) * st.Bsize; free > 768<<10; free -= int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, body := httpGet(srv.Base + "/sts/SAVE?FILENAME=l&FORMAT=JSON"); !strings.Contains(body, "min-free-bytes") {
		t.Errorf("SAVE within the reserve: %s", body)
	} else {
		t.Logf("SAVE within the reserve: %s", strings.TrimSpace(body))
	}
	// Then fill the volume.
	for {
		if _, err := f.Write(chunk[:4096]); err != nil {
			break
		}
	}
	f.Close()
	inFlight := make(chan string, 1)
	go func() { _, body := httpGet(srv.Base + "/sts/ADD?FILENAME=l&LINE=in-flight"); inFlight <- body }()
	var koStatus int
	var koBody string
	var maybe []string // sent while the disk filled, the client gave up: either way, at most once
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		line := fmt.Sprintf("try-%d", i)
		koStatus, koBody = httpGetWithin(srv.Base+"/sts/ADD?FILENAME=l&FORMAT=JSON&LINE="+line, 300*time.Millisecond)
		if koStatus == http.StatusServiceUnavailable {
			break
		}
		if strings.Contains(koBody, `"ok":true`) {
			acked = append(acked, line) // written before the volume was full
		} else {
			maybe = append(maybe, line)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("ADD on a full volume: HTTP %d %s", koStatus, strings.TrimSpace(koBody))
	if koStatus != http.StatusServiceUnavailable {
		t.Fatalf("no 503 on a full volume\n%s", srv.Logs)
	}
	status, body := httpGet(srv.Base + "/sts/READ?FILENAME=l&FORMAT=JSON")
	t.Logf("consuming READ on a full volume: HTTP %d %s", status, strings.TrimSpace(body))
	if status != http.StatusServiceUnavailable {
		t.Errorf("a consuming READ on a full volume: HTTP %d", status)
	}
	status, body = httpGet(srv.Base + "/sts/LENGTH?FILENAME=l")
	t.Logf("LENGTH on a full volume: HTTP %d %s", status, strings.TrimSpace(body))
	if !strings.Contains(body, "OK") {
		t.Errorf("LENGTH on a full volume: %s", body)
	}
	// Ready still, so that clients get the KO above and can read, rather than no endpoint.
	if ready := srv.Status("/readyz"); ready != http.StatusOK {
		t.Errorf("/readyz on a full volume: HTTP %d, want 200", ready)
	}
	select {
	case <-srv.Exited():
		t.Fatalf("the server exited on a full volume\n%s", srv.Logs)
	default:
	}

	freed := time.Now()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The journal tries again every DefaultRetryInterval: the next try after space returns
	// writes, well within three intervals on a loaded machine; make adversarial prints the time.
	within := 3 * journal.DefaultRetryInterval
	var recovered time.Duration
	for time.Since(freed) < 10*time.Second {
		if _, body := httpGet(srv.Base + "/sts/ADD?FILENAME=l&LINE=after"); strings.Contains(body, "OK") {
			recovered = time.Since(freed)
			acked = append(acked, "after")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if recovered == 0 {
		t.Fatalf("changes still refused 10 s after space returned\n%s", srv.Logs)
	}
	if recovered > within {
		t.Errorf("changes accepted again %v after space returned, want within %v (the journal retries every %v)", recovered, within, journal.DefaultRetryInterval)
	}
	inFlightBody := <-inFlight
	t.Logf("changes accepted again %v after space returned; the ADD in flight when the disk filled answered %q", recovered.Round(time.Millisecond), strings.TrimSpace(inFlightBody))
	if strings.Contains(inFlightBody, "OK") {
		acked = append(acked, "in-flight")
	} else {
		maybe = append(maybe, "in-flight")
	}

	srv.Signal(t, syscall.SIGKILL)
	<-srv.Exited()
	again := launch(t, port, args...)
	again.WaitReady(t)
	got := again.Export(t, "l")
	for _, line := range acked {
		if n := strings.Count("\n"+strings.Join(got, "\n")+"\n", "\n"+line+"\n"); n != 1 {
			t.Errorf("acknowledged line %q is there %d times after the restart", line, n)
		}
	}
	for _, line := range maybe {
		if n := slices.Index(got, line); n >= 0 && slices.Index(got[n+1:], line) >= 0 {
			t.Errorf("line %q, whose client gave up, is there twice", line)
		}
	}
	extra := slices.DeleteFunc(slices.Clone(got), func(l string) bool { return slices.Contains(acked, l) || slices.Contains(maybe, l) })
	if len(extra) > 0 {
		t.Errorf("lines nobody had acknowledged after the restart: %q", extra)
	}
	t.Logf("after SIGKILL and restart: %d lines, every acknowledged one once", len(got))
}
