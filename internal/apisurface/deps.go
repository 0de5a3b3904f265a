package apisurface

import (
	"bufio"
	"errors"
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Deps returns, sorted, the import paths that the non-test files of the
// package in dir (relative to the module root) import, directly or
// through the module's own packages, which it follows: packages of the
// standard library, of the module, and of other modules (whose own
// imports it does not follow). Files are selected by the build
// constraints of the host, as go build selects them.
func Deps(root, dir string) ([]string, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var visit func(rel string) error
	visit = func(rel string) error {
		p, err := build.Default.ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
		if err != nil {
			return fmt.Errorf("apisurface: %s: %w", rel, err)
		}
		for _, imp := range p.Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if imp == module {
				err = visit(".")
			} else if sub, ok := strings.CutPrefix(imp, module+"/"); ok {
				err = visit(sub)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(dir); err != nil {
		return nil, err
	}
	deps := make([]string, 0, len(seen))
	for imp := range seen {
		deps = append(deps, imp)
	}
	slices.Sort(deps)
	return deps, nil
}

// Standard reports whether an import path names a package of the
// standard library: its first element has no dot, as the paths of
// modules on the network have.
func Standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// modulePath reads the module path of a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("apisurface: no module line in " + gomod)
}
