package main

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestParseProperties(t *testing.T) {
	text := "# a comment\n" +
		"  ! another comment \\\n" +
		"jmeterPlugin.sts.port=9292\n" +
		"jmeterPlugin.sts.datasetDirectory : /data/sets\n" +
		"key\twith tab separator\n" +
		"spaces   =   value with trailing space \n" +
		"continued = first, \\\n" +
		"    second,\\\n" +
		"\tthird\n" +
		"escaped\\ key\\=x = a\\tb\\u0041\\\\ \n" +
		"empty=\n" +
		"lonely\n" +
		"\r\n" +
		"crlf=yes\r\n" +
		"colon:value:with:colons\n" +
		"last=ends with backslash\\"
	want := map[string]string{
		"jmeterPlugin.sts.port":             "9292",
		"jmeterPlugin.sts.datasetDirectory": "/data/sets",
		"key":                               "with tab separator",
		"spaces":                            "value with trailing space ",
		"continued":                         "first, second,third",
		"escaped key=x":                     "a\tbA\\ ",
		"empty":                             "",
		"lonely":                            "",
		"crlf":                              "yes",
		"colon":                             "value:with:colons",
		"last":                              "ends with backslash",
	}
	got, err := parseProperties(text)
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("parseProperties:\n got %q, %v\nwant %q", got, err, want)
	}
	if _, err := parseProperties("bad=\\u12G4"); err == nil {
		t.Error("a malformed \\u escape was accepted")
	}
}

func TestReadPropertiesIsLatin1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jmeter.properties")
	if err := os.WriteFile(path, []byte("dir=/donn\xe9es\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readProperties(path)
	if err != nil || got["dir"] != "/données" {
		t.Errorf("readProperties: %q, %v", got, err)
	}
}
