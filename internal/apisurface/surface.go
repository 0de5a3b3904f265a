// Package apisurface measures the exported surface of the module: how many
// identifiers its public packages export, how many of those declarations
// are generic, and which lack a doc comment. Its test holds the module to
// its limits, so that the API stays as small as it was made.
//
// Public packages are those outside internal/, cmd/ and the examples.
// Identifiers are exported functions, types, constants, variables, and
// methods of exported types; struct fields are not counted. Test files,
// testdata and directories starting with "." or "_" are skipped.
package apisurface

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Surface is the exported surface of a module.
type Surface struct {
	// Packages maps a package directory, relative to the module root, to
	// its counts.
	Packages map[string]*Counts
	// Undocumented lists the exported identifiers without a doc comment,
	// as "dir: name", sorted.
	Undocumented []string
}

// Counts are one package's exported identifiers and generic declarations.
type Counts struct {
	Identifiers int
	Generic     int
}

// Total returns the sums over every package.
func (s *Surface) Total() Counts {
	var t Counts
	for _, c := range s.Packages {
		t.Identifiers += c.Identifiers
		t.Generic += c.Generic
	}
	return t
}

// Public reports whether the package in dir (relative to the module root,
// with forward slashes) is part of the public API.
func Public(dir string) bool {
	for _, seg := range strings.Split(dir, "/") {
		if seg == "internal" || seg == "testdata" || strings.HasPrefix(seg, "example") {
			return false
		}
	}
	return dir != "cmd" && !strings.HasPrefix(dir, "cmd/")
}

// Measure parses the non-test Go files of the public packages under root.
func Measure(root string) (*Surface, error) {
	s := &Surface{Packages: map[string]*Counts{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			// A nested module (the benchmarks) is not part of this one.
			if rel != "." && fileExists(filepath.Join(path, "go.mod")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if !Public(dir) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		c := s.Packages[dir]
		if c == nil {
			c = &Counts{}
			s.Packages[dir] = c
		}
		s.count(dir, f, c)
		return nil
	})
	slices.Sort(s.Undocumented)
	return s, err
}

func (s *Surface) count(dir string, f *ast.File, c *Counts) {
	undocumented := func(name string) { s.Undocumented = append(s.Undocumented, dir+": "+name) }
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil {
				recv := receiverName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			} else if d.Type.TypeParams != nil {
				c.Generic++
			}
			c.Identifiers++
			if d.Doc == nil {
				undocumented(name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if !sp.Name.IsExported() {
						continue
					}
					c.Identifiers++
					if sp.TypeParams != nil {
						c.Generic++
					}
					if sp.Doc == nil && d.Doc == nil {
						undocumented(sp.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						if !n.IsExported() {
							continue
						}
						c.Identifiers++
						if sp.Doc == nil && sp.Comment == nil && d.Doc == nil {
							undocumented(n.Name)
						}
					}
				}
			}
		}
	}
}

// receiverName returns the type name of a method receiver.
func receiverName(t ast.Expr) string {
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Report renders s as a table, one package a line, with the totals.
func (s *Surface) Report() string {
	dirs := make([]string, 0, len(s.Packages))
	for d := range s.Packages {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	var b strings.Builder
	for _, d := range dirs {
		c := s.Packages[d]
		fmt.Fprintf(&b, "%-40s %5d %3d\n", d, c.Identifiers, c.Generic)
	}
	t := s.Total()
	fmt.Fprintf(&b, "%-40s %5d %3d\n", "total", t.Identifiers, t.Generic)
	return b.String()
}
