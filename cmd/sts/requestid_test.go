package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// A server killed while it holds a REQUEST_ID's request (a READ waiting for a line) leaves
// nothing behind that its client's retry, through another server, must wait out: the retry waits
// for a line as the first did, and gets the one that comes.
func TestARetryOutlivesTheServerThatDied(t *testing.T) {
	srv := redistest.Start(t)
	servers := startShared(t, 2, srv.URL())
	target := "/sts/READ?FILENAME=q&KEEP=FALSE&WAIT=30000&REQUEST_ID=orphan&FORMAT=JSON"
	go func() { _, _ = http.Get(servers[0].Base + target) }() // its answer never comes
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the first READ to wait", func() bool {
		return strings.Contains(getBody(t, servers[0].Base+"/metrics"), "\nsts_waiting_reads 1\n")
	})
	servers[0].Signal(t, syscall.SIGKILL)

	retried := make(chan string, 1)
	go func() { retried <- getBody(t, servers[1].Base+target) }()
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the retry to wait", func() bool {
		return strings.Contains(getBody(t, servers[1].Base+"/metrics"), "\nsts_waiting_reads 1\n")
	})
	if body := getBody(t, servers[1].Base+"/sts/ADD?FILENAME=q&LINE=x"); !strings.Contains(body, "OK") {
		t.Fatalf("ADD: %q", body)
	}
	select {
	case body := <-retried:
		if body != `{"ok":true,"command":"READ","value":"x"}`+"\n" {
			t.Fatalf("the retry through the second server got %q", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the retry through the second server did not answer")
	}
}
