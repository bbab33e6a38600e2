package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestContainerdImportsAndRunsImage imports an archive into a private containerd the way a
// cluster node does (`ctr -n k8s.io images import`) and runs it, with a stand-in binary that
// reports the user it runs as; then, where Debian's redis-server is installed, the Redis image
// of -dynamic, whose programs must find their libraries. It needs root and containerd, ctr and runc on PATH (Debian's
// containerd and runc packages, which the local cluster uses); elsewhere it is skipped.
func TestContainerdImportsAndRunsImage(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.Skip(t, "needs root to run containerd")
	}
	for _, tool := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Skip(t, "%s is not installed", tool)
		}
	}
	dir, err := os.MkdirTemp("", "imagebuild-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	// Best effort: containerd leaves root-owned state that a failed run may still hold mounted.
	t.Cleanup(func() { os.RemoveAll(dir) })

	stand := filepath.Join(dir, "whoami")
	build := exec.Command("go", "build", "-o", stand, "./testdata/whoami")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in binary: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(stand)
	if err != nil {
		t.Fatal(err)
	}
	img := testImage()
	img.Tag = "sts-operator:containerd-test"
	img.Files = []File{{Path: "/manager", Mode: 0o755, Data: binary}, {Path: "/sts", Mode: 0o755, Data: binary}}
	archive := filepath.Join(dir, "image.tar")
	if _, err := writeFile(archive, img); err != nil {
		t.Fatal(err)
	}

	socket := startContainerd(t, dir)
	ctr := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", socket, "-n", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ctr("images", "import", archive)
	ref := "docker.io/library/" + img.Tag
	if list := ctr("images", "ls", "-q"); !strings.Contains(list, ref) {
		t.Fatalf("imported images %q lack %s", list, ref)
	}
	for _, run := range []struct {
		name  string
		args  []string
		argv0 string
	}{
		{"entrypoint", nil, "/manager"},   // the image's Entrypoint
		{"sts", []string{"/sts"}, "/sts"}, // the table server, as the operator starts it
	} {
		out := ctr(append([]string{"run", "--rm", ref, "run-" + run.name}, run.args...)...)
		want := "argv0=" + run.argv0 + " uid=65532 gid=65532 user=nonroot wd=/ tmp-writable=true"
		if !strings.Contains(out, want) {
			t.Errorf("%s: container printed %q, want %q", run.name, out, want)
		}
	}

	// The local cluster's Redis image: dynamically linked programs with their libraries.
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		t.Log("skipping the dynamically linked image: /usr/bin/redis-server is not installed")
		return
	}
	redis := img
	redis.Tag = "sts-e2e-redis:containerd-test"
	if redis.Files, err = dynamicFiles(runtime.GOARCH, "/usr/bin/redis-server", []string{"/usr/bin/redis-cli"}); err != nil {
		t.Fatal(err)
	}
	redis.Entrypoint = []string{"/usr/bin/redis-server"}
	archive = filepath.Join(dir, "redis.tar")
	if _, err := writeFile(archive, redis); err != nil {
		t.Fatal(err)
	}
	ctr("images", "import", archive)
	ref = "docker.io/library/" + redis.Tag
	if out := ctr("run", "--rm", ref, "run-redis-server", "/usr/bin/redis-server", "--version"); !strings.HasPrefix(out, "Redis server v=") {
		t.Errorf("redis-server --version printed %q", out)
	}
	if out := ctr("run", "--rm", ref, "run-redis-cli", "/usr/bin/redis-cli", "--version"); !strings.HasPrefix(out, "redis-cli ") {
		t.Errorf("redis-cli --version printed %q", out)
	}
}

// startContainerd runs a containerd with its state under dir until the test ends and returns
// its socket.
func startContainerd(t *testing.T, dir string) string {
	t.Helper()
	socket := filepath.Join(dir, "containerd.sock")
	config := filepath.Join(dir, "config.toml")
	err := os.WriteFile(config, []byte(`version = 2
root = "`+filepath.Join(dir, "root")+`"
state = "`+filepath.Join(dir, "state")+`"
[grpc]
  address = "`+socket+`"
[plugins."io.containerd.internal.v1.opt"]
  path = "`+filepath.Join(dir, "opt")+`"
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command("containerd", "--config", config)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("containerd log:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if exec.Command("ctr", "--address", socket, "version").Run() == nil {
			return socket
		}
	}
	t.Fatal("containerd did not answer within 30s")
	return ""
}
