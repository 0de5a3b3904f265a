package schema

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// jsonField is one struct field as encoding/json sees it: its JSON name and
// where it lives, possibly promoted from an embedded struct.
type jsonField struct {
	name   string
	goPath string // Go field names through embedded structs, e.g. "Base.ID"
	index  []int
	field  reflect.StructField
	tagged bool
	// optional: the json tag has omitempty or omitzero, or the field is
	// promoted through an embedded pointer that may be nil.
	optional bool
	// stringOpt: the json tag has the ",string" option.
	stringOpt bool
}

// fieldProblem is a field layout that encoding/json accepts silently but
// that would make a schema lie or surprise: For turns each one into an
// error, KeyChecker keeps to what encoding/json does.
type fieldProblem struct {
	goPath string
	reason string
	// unexportedPointer: an embedded pointer to an unexported struct
	// type, which encoding/json cannot allocate; the other problems are
	// names it ignores.
	unexportedPointer bool
}

// jsonFields lists the fields encoding/json encodes and decodes for struct
// type t, in Go field order, applying its rules: exported fields only,
// "-" skipped, embedded structs without a name tag promoted, and for a name
// found at several depths the shallowest wins, a tagged field winning a tie.
func jsonFields(t reflect.Type) ([]jsonField, []fieldProblem) {
	type level struct {
		typ    reflect.Type
		index  []int
		goPath string
		viaPtr bool
	}
	var (
		all      []jsonField
		depths   []int
		problems []fieldProblem
		expanded = map[reflect.Type]bool{}
		current  = []level{{typ: t}}
	)
	for depth := 0; len(current) > 0; depth++ {
		var next []level
		for _, lv := range current {
			if expanded[lv.typ] {
				continue
			}
			expanded[lv.typ] = true
			for i := range lv.typ.NumField() {
				sf := lv.typ.Field(i)
				goPath := sf.Name
				if lv.goPath != "" {
					goPath = lv.goPath + "." + sf.Name
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if sf.Anonymous {
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if name != "" && !validName(name) {
					problems = append(problems, fieldProblem{goPath: goPath, reason: "json tag name " + quote(name) + " is not a valid JSON field name"})
					name = ""
				}
				index := append(slices.Clip(lv.index), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					viaPtr := lv.viaPtr || sf.Type.Kind() == reflect.Pointer
					if sf.Type.Kind() == reflect.Pointer && !sf.IsExported() {
						problems = append(problems, fieldProblem{goPath: goPath, unexportedPointer: true,
							reason: "embedded pointer to unexported struct type " + ft.String() + " cannot be decoded by encoding/json"})
					}
					next = append(next, level{typ: ft, index: index, goPath: goPath, viaPtr: viaPtr})
					continue
				}
				f := jsonField{
					name:     name,
					goPath:   goPath,
					index:    index,
					field:    sf,
					tagged:   name != "",
					optional: lv.viaPtr,
				}
				if f.name == "" {
					f.name = sf.Name
				}
				for opt := range strings.SplitSeq(opts, ",") {
					switch opt {
					case "omitempty", "omitzero":
						f.optional = true
					case "string":
						f.stringOpt = true
					}
				}
				all = append(all, f)
				depths = append(depths, depth)
			}
		}
		current = next
	}

	// Resolve names used more than once.
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(all[a].name, all[b].name), cmp.Compare(depths[a], depths[b]))
	})
	keep := make([]bool, len(all))
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && all[order[end]].name == all[order[start]].name {
			end++
		}
		// Candidates: the fields at the shallowest depth of this name.
		shallow := start + 1
		for shallow < end && depths[order[shallow]] == depths[order[start]] {
			shallow++
		}
		winner := -1
		if shallow-start == 1 {
			winner = order[start]
		} else {
			tagged := 0
			for _, k := range order[start:shallow] {
				if all[k].tagged {
					tagged++
					winner = k
				}
			}
			if tagged != 1 {
				winner = -1
				paths := make([]string, 0, shallow-start)
				for _, k := range order[start:shallow] {
					paths = append(paths, all[k].goPath)
				}
				slices.Sort(paths)
				problems = append(problems, fieldProblem{goPath: paths[0], reason: "fields " + strings.Join(paths, " and ") +
					" all map to JSON name " + quote(all[order[start]].name) + ", so encoding/json ignores them"})
			}
		}
		if winner >= 0 {
			keep[winner] = true
		}
		start = end
	}
	fields := make([]jsonField, 0, len(all))
	for i, f := range all {
		if keep[i] {
			fields = append(fields, f)
		}
	}
	slices.SortFunc(fields, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return fields, problems
}

// validName reports whether encoding/json would use name from a json tag;
// it falls back to the Go field name otherwise.
func validName(name string) bool {
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
