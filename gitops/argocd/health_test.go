// Package argocd holds the Argo CD health check for SimpleTableServer (health.lua) and its tests.
package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// healthStatus is what an Argo CD health script returns.
type healthStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// healthTests is the layout of health_test.yaml, the one Argo CD uses for its built-in checks.
type healthTests struct {
	Tests []struct {
		InputPath    string       `json:"inputPath"`
		HealthStatus healthStatus `json:"healthStatus"`
	} `json:"tests"`
}

// validStatuses are the health codes Argo CD accepts; any other makes it report Unknown.
var validStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

// runHealth evaluates script on obj the way Argo CD runs a health check configured in argocd-cm:
// only the package, base and table libraries are open (Argo CD adds a reduced os library that
// this script does not use), the object is the global obj, converted as Argo CD converts an
// unstructured object, a one-second deadline, and the value the chunk returns is the result.
func runHealth(script string, obj map[string]any) (healthStatus, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage,
		lua.BaseLibName: lua.OpenBase,
		lua.TabLibName:  lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return healthStatus{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return healthStatus{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return healthStatus{}, fmt.Errorf("script returned %s, want a table", l.Get(-1).Type())
	}
	hs := healthStatus{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
	if !validStatuses[hs.Status] {
		return hs, fmt.Errorf("script returned status %q, which Argo CD reports as Unknown", hs.Status)
	}
	return hs, nil
}

// toLua converts an unstructured object's values to Lua: maps to tables, slices to 1-based
// arrays, integers (unstructured keeps them as int64) and floats to numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetString(k, toLua(l, item))
		}
		return t
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	default:
		return lua.LNil
	}
}

func readObject(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return u.Object
}

func readScript(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile("health.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(script)
}

func TestHealth(t *testing.T) {
	script := readScript(t)
	data, err := os.ReadFile("health_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases healthTests
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatalf("health_test.yaml: %v", err)
	}
	covered := map[string]bool{}
	for _, tc := range cases.Tests {
		covered[filepath.Clean(tc.InputPath)] = true
		t.Run(filepath.Base(tc.InputPath), func(t *testing.T) {
			got, err := runHealth(script, readObject(t, tc.InputPath))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.HealthStatus {
				t.Errorf("health = %+v, want %+v", got, tc.HealthStatus)
			}
		})
	}
	fixtures, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range fixtures {
		if !covered[f] {
			t.Errorf("%s is not used by any case in health_test.yaml", f)
		}
	}
}

// TestHealthNeverFails feeds objects that a half-written or foreign resource could have: the
// script must still return a valid status, because a Lua error leaves Argo CD with no health.
func TestHealthNeverFails(t *testing.T) {
	script := readScript(t)
	for name, obj := range map[string]map[string]any{
		"no generation": {"metadata": map[string]any{"name": "x"}},
		"empty status":  {"metadata": map[string]any{"generation": int64(1)}, "status": map[string]any{}},
		"no conditions": {"metadata": map[string]any{"generation": int64(1)}, "status": map[string]any{"observedGeneration": int64(1), "conditions": []any{}}},
		"condition without fields": {
			"metadata": map[string]any{"generation": int64(1)},
			"status":   map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{"type": "Ready", "status": "False"}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := runHealth(script, obj); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestArgoCDConfigMapCarriesScript keeps the ready-to-apply argocd-cm snippet equal to health.lua.
func TestArgoCDConfigMapCarriesScript(t *testing.T) {
	obj := readObject(t, "argocd-cm.yaml")
	key := "resource.customizations.health.sts.tableserver.dev_SimpleTableServer"
	got, found, err := unstructured.NestedString(obj, "data", key)
	if err != nil || !found {
		t.Fatalf("argocd-cm.yaml has no data.%s (err %v)", key, err)
	}
	if got != readScript(t) {
		t.Fatalf("argocd-cm.yaml data.%s differs from health.lua; copy health.lua into it", key)
	}
}
