package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// filler prepares a directory on a volume: it creates it, hands it to the table server's user
// (a hostPath volume ignores the pod's fsGroup) and writes a dataset file of numbered lines.
type filler struct {
	dir, file, prefix string
	count, owner      int
}

func (f *filler) flags(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "dir", "", "`directory` to create")
	fs.StringVar(&f.file, "file", "", "file `name` in -dir to write (none when empty)")
	fs.StringVar(&f.prefix, "prefix", "", "line prefix: the lines are <prefix>-000000, <prefix>-000001, ...")
	fs.IntVar(&f.count, "count", 0, "number of lines in -file")
	fs.IntVar(&f.owner, "owner", -1, "user and group `id` that gets -dir and -file (-1: leave as is)")
}

func (f *filler) run() error {
	if f.dir == "" || (f.file != "" && (f.prefix == "" || f.count < 0)) {
		return usageError("fill needs -dir, and with -file also -prefix and -count >= 0")
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return err
	}
	if err := f.chown(f.dir); err != nil {
		return err
	}
	if f.file == "" {
		return nil
	}
	path := filepath.Join(f.dir, f.file)
	tmp := path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	for i := range f.count {
		fmt.Fprintln(w, line(f.prefix, i))
	}
	err = w.Flush()
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = f.chown(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path) // a reader never sees half a file
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func (f *filler) chown(path string) error {
	if f.owner < 0 {
		return nil
	}
	return os.Chown(path, f.owner, f.owner)
}
