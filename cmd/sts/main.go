// Command sts is the table server: a drop-in replacement for the JMeter "HTTP Simple Table
// Server". It listens on --bind:--port, loads the startup lists, and serves until SIGTERM,
// SIGINT or /sts/STOP, finishing the requests in flight. It never reads standard input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	s, err := resolveSettings(args, lookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sts:", err)
		return 2
	}
	if s.version {
		fmt.Fprintln(stdout, version.Version)
		return 0
	}
	log := newLogger(s.logFormat, stderr)
	if err := serve(s, log); err != nil {
		log.Error("Table server failed", "error", err)
		return 1
	}
	return 0
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// serve runs the server until a signal or STOP, then shuts it down gracefully.
func serve(s *settings, log *slog.Logger) error {
	srv, err := sts.NewServer(s.server, store.NewMemory(), log)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(s.bind, strconv.Itoa(s.server.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := srv.HTTPServer(addr)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("Listening", "address", ln.Addr().String(), "version", version.Version, "datasetDir", s.server.DatasetDir)
	// Like the original, startup loading runs once the listener is up; /readyz says when it is done.
	go srv.LoadAtStartup()

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	select {
	case sig := <-signals:
		log.Info("Stopping", "signal", sig.String())
	case <-srv.StopRequested():
		log.Info("Stopping", "reason", "STOP command")
	case err := <-served:
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		_ = hs.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	log.Info("Stopped")
	return nil
}
