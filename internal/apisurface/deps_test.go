package apisurface_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/internal/apisurface"
)

const module = "github.com/agentcap/agentcap"

// checkDeps fails the test for every package that the package in dir
// imports, directly or through the module's packages, and that is
// neither of the standard library nor allowed.
func checkDeps(t *testing.T, dir string, allowed func(path string) bool) {
	t.Helper()
	deps, err := apisurface.Deps("../..", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(deps, module) {
		t.Errorf("%s does not import the root package: the walk found %v", dir, deps)
	}
	for _, d := range deps {
		if !apisurface.Standard(d) && !allowed(d) {
			t.Errorf("%s depends on %s", dir, d)
		}
	}
}

// internalPackage reports the module's internal packages that sit at the
// top of the module, which hold helpers of the standard library alone
// (their own imports are followed and checked too).
func internalPackage(path string) bool {
	return strings.HasPrefix(path, module+"/internal/")
}

// TestClientDependencies holds the client to its vocabulary: the root
// package, the module's internal helpers, and a JWT library; never a
// server package.
func TestClientDependencies(t *testing.T) {
	checkDeps(t, "client", func(path string) bool {
		return path == module || internalPackage(path) || strings.HasPrefix(path, "github.com/go-jose/go-jose/v4")
	})
}

// TestCommandDependencies holds the agentcap command to the client, the
// vocabulary and the MCP SDK of its bridge: no server package.
func TestCommandDependencies(t *testing.T) {
	checkDeps(t, "cmd/agentcap", func(path string) bool {
		return path == module || path == module+"/client" || internalPackage(path) ||
			strings.HasPrefix(path, "github.com/go-jose/go-jose/v4") ||
			strings.HasPrefix(path, "github.com/modelcontextprotocol/go-sdk/")
	})
}

func TestStandard(t *testing.T) {
	for path, want := range map[string]bool{
		"fmt": true, "net/http": true, "crypto/ed25519": true,
		module: false, "github.com/go-jose/go-jose/v4": false, "golang.org/x/oauth2": false,
	} {
		if got := apisurface.Standard(path); got != want {
			t.Errorf("Standard(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestTransportsIndependent holds Agent Auth and MCP apart from the HTTP
// transport: no package under agentauth/ or mcpx/ imports httpx, directly
// or through the module's packages, and the root vocabulary and the auth
// seam import nothing of the module's but each other and the internal
// helpers.
func TestTransportsIndependent(t *testing.T) {
	for _, dir := range []string{"agentauth", "agentauth/provider", "agentauth/store", "agentauth/ratelimit", "mcpx"} {
		deps, err := apisurface.Deps("../..", dir)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(deps, module+"/httpx") {
			t.Errorf("%s depends on httpx", dir)
		}
	}
	for _, dir := range []string{".", "auth"} {
		deps, err := apisurface.Deps("../..", dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, module+"/") && d != module+"/auth" && !internalPackage(d) {
				t.Errorf("%s depends on %s", dir, d)
			}
		}
	}
}
