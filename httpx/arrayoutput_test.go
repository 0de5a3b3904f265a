package httpx_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

type listedItem struct {
	ID string `json:"id"`
}

type listQuery struct {
	Empty bool `json:"empty,omitempty"`
}

// arrayHandler serves a capability whose result is a top-level array; it
// answers a nil slice when asked for nothing.
func arrayHandler(t *testing.T) *httpx.Handler {
	t.Helper()
	items := core.MustDefine("items", "List the items",
		func(_ context.Context, _ appCtx, q listQuery) ([]listedItem, error) {
			if q.Empty {
				return nil, nil
			}
			return []listedItem{{ID: "i1"}, {ID: "i2"}}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(items), newAppCtx, core.Config{})
	h, err := httpx.New(exec, httpx.Config{Verifier: tokens{}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestArrayOutput(t *testing.T) {
	h := arrayHandler(t)
	tests := []struct {
		name, method, path, body string
		want                     string
	}{
		{"execute", "POST", "/capability/execute", `{"capability":"items"}`,
			`{"data":[{"id":"i1"},{"id":"i2"}]}`},
		{"execute with nothing to list", "POST", "/capability/execute", `{"capability":"items","arguments":{"empty":true}}`,
			`{"data":[]}`},
		{"batch", "POST", "/capability/batch-execute",
			`{"requests":[{"id":"a","capability":"items"},{"id":"b","capability":"items","arguments":{"empty":true}}]}`,
			`{"responses":[{"id":"a","status":"completed","data":[{"id":"i1"},{"id":"i2"}]},{"id":"b","status":"completed","data":[]}]}`},
		{"describe", "GET", "/capability/describe?name=items", "",
			`{"name":"items","description":"List the items",` +
				`"input":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"empty":{"type":"boolean"}},"additionalProperties":false},` +
				`"output":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","items":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}},` +
				`"approval_strength":"none","required_constraints":[],"risk":"low","supports_preview":false,"requires_confirmation":false}`},
		{"list", "GET", "/capability/list", "",
			`{"capabilities":[{"name":"items","description":"List the items","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":false,"next_cursor":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctype := ""
			if tt.body != "" {
				ctype = jsonType
			}
			r := call(t, h, tt.method, tt.path, "Bearer alice", ctype, tt.body)
			if r.Status != 200 || strings.TrimSpace(r.Body) != tt.want {
				t.Errorf("%d %s\nwant 200 %s", r.Status, r.Body, tt.want)
			}
		})
	}
}
