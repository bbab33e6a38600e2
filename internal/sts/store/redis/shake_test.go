package redis

import (
	"strings"
	"testing"
)

func TestShakeKeepsWhatAScriptCanReach(t *testing.T) {
	src := `local list = KEYS[1]
-- unused is named here, in a comment, and nowhere else
local function unused()
  return 1
end
local function oneLine(x) return x end
local function leaf(x)
  return x .. 'used'
end
local function inner()
  return leaf(list)
end
local function quoted()
  return 2
end
local function alsoUnused()
  return unused()
end
local sizes = {quoted = 'quoted'}
return inner()
`
	got := shake(src)
	for _, kept := range []string{"local function leaf(", "local function inner(", "local function quoted(", "-- unused is named here", "return inner()"} {
		if !strings.Contains(got, kept) {
			t.Errorf("shake dropped %q:\n%s", kept, got)
		}
	}
	for _, dropped := range []string{"local function unused(", "local function alsoUnused(", "local function oneLine("} {
		if strings.Contains(got, dropped) {
			t.Errorf("shake kept %q:\n%s", dropped, got)
		}
	}
}

func TestShakeRefusesADoubleDashInAString(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("shake took a \"--\" in a string for a comment")
		}
	}()
	shake("local function f()\n  return 1\nend\nreturn 'a -- f'\n")
}
