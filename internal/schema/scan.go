package schema

import (
	"math/big"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// ValidateJSON is Validate for a document given as JSON text: it returns
// the violations Validate reports for the tree jsonvalue.Parse builds from
// data, or Parse's error when data is not a single well-formed JSON value.
//
// A native validator reads the text once, with a jsonvalue.Reader, and
// builds no tree: a document that passes costs one copy of the text and no
// other allocation. It still builds a tree for the few values whose checks
// compare whole values (an enum that lists objects or arrays, and
// uniqueItems), and for the whole document when the text is not
// well-formed, so that the error is exactly Parse's.
func (v *Validator) ValidateJSON(data []byte) ([]Violation, error) {
	if v.native != nil {
		st := scanStates.Get().(*scanState)
		st.rd.Reset(data)
		var r run
		err := v.native.scan(&r, st)
		if err == nil {
			err = st.rd.Finish()
		}
		st.release()
		if err == nil {
			if len(r.out) == 0 {
				return nil, nil
			}
			sortViolations(r.out)
			return slices.Compact(r.out), nil
		}
	}
	tree, err := jsonvalue.Parse(data)
	if err != nil {
		return nil, err
	}
	return v.Validate(tree), nil
}

// scanState is the reader and scratch space of one ValidateJSON call.
type scanState struct {
	rd jsonvalue.Reader
	// seen marks, for each open object, which of its schema's properties
	// and required-only names have been met, innermost last.
	seen []bool
}

var scanStates = sync.Pool{New: func() any { return new(scanState) }}

// maxPooledSeen keeps one huge object from pinning a large scratch slice in
// the pool.
const maxPooledSeen = 1 << 12

func (st *scanState) release() {
	if cap(st.seen) > maxPooledSeen {
		return
	}
	st.seen = st.seen[:0]
	// Reset drops the reader's copy of the document.
	st.rd.Reset(nil)
	scanStates.Put(st)
}

// scan validates the value at the reader's position against n, reporting
// exactly what check reports for the same value parsed into a tree. An
// error is the reader's: the text is not well-formed.
func (n *nativeNode) scan(r *run, st *scanState) error {
	rd := &st.rd
	if n.open {
		return rd.Skip()
	}
	if n.never {
		r.add(msgNotAllowed)
		return rd.Skip()
	}
	k, err := rd.Peek()
	if err != nil {
		return err
	}
	if n.orNull != nil {
		// compileNode admits nothing but annotations next to anyOf, so the
		// value meets orNull's schema or is null.
		if k == jsonvalue.KindNull {
			return rd.ReadNull()
		}
		before := len(r.out)
		if err := n.orNull.scan(r, st); err != nil {
			return err
		}
		if len(r.out) > before {
			r.report(&kind.Type{Got: typeOfKind(k).String(), Want: []string{"null"}})
		}
		return nil
	}
	t := typeOfKind(k)
	switch k {
	case jsonvalue.KindObject, jsonvalue.KindArray:
		if n.types != 0 && n.types&t == 0 {
			r.report(&kind.Type{Got: t.String(), Want: n.typeNames})
			return rd.Skip()
		}
		if n.hasEnum || n.uniqueItems {
			// Both compare whole values: check builds the tree of this
			// value alone.
			return n.scanTree(r, st)
		}
		if k == jsonvalue.KindObject {
			return n.scanObject(r, st)
		}
		return n.scanArray(r, st)
	case jsonvalue.KindString:
		s, err := rd.ReadString()
		if err != nil {
			return err
		}
		switch {
		case n.types != 0 && n.types&typeString == 0:
			r.report(&kind.Type{Got: t.String(), Want: n.typeNames})
		case n.hasEnum && !n.inEnumString(s):
			r.report(&kind.Enum{Got: s, Want: n.enum})
		case n.format != nil:
			if err := n.format(s); err != nil {
				r.add(formatMessage(s, n.formatName, err))
				return nil
			}
			n.checkString(r, s)
		default:
			n.checkString(r, s)
		}
	case jsonvalue.KindNumber:
		text, err := rd.ReadNumber()
		if err != nil {
			return err
		}
		num, _ := jsonvalue.ParseDecimal(string(text))
		switch {
		case n.types != 0 && n.types&typeNumber == 0 && !(n.types&typeInteger != 0 && num.IsInteger()):
			r.report(&kind.Type{Got: t.String(), Want: n.typeNames})
		case n.hasEnum && !n.inEnumNumber(num):
			r.report(&kind.Enum{Got: text, Want: n.enum})
		case n.numeric:
			n.checkNumber(r, num, func() *big.Rat { return ratOf(text) })
		}
	case jsonvalue.KindBool:
		b, err := rd.ReadBool()
		if err != nil {
			return err
		}
		n.checkLiteral(r, t, b)
	case jsonvalue.KindNull:
		if err := rd.ReadNull(); err != nil {
			return err
		}
		n.checkLiteral(r, t, nil)
	}
	return nil
}

// checkLiteral checks true, false or null, which only type and enum
// constrain.
func (n *nativeNode) checkLiteral(r *run, t jsonType, v any) {
	if n.types != 0 && n.types&t == 0 {
		r.report(&kind.Type{Got: t.String(), Want: n.typeNames})
		return
	}
	if n.hasEnum && !n.inEnum(v, t, jsonvalue.Decimal{}) {
		r.report(&kind.Enum{Got: v, Want: n.enum})
	}
}

// scanTree reads the value at the reader's position, parses its text into
// a tree and checks that.
func (n *nativeNode) scanTree(r *run, st *scanState) error {
	start := st.rd.Offset()
	if err := st.rd.Skip(); err != nil {
		return err
	}
	v, err := jsonvalue.Parse([]byte(st.rd.Raw(start)))
	if err != nil {
		return err
	}
	n.check(r, v)
	return nil
}

func (n *nativeNode) scanObject(r *run, st *scanState) error {
	rd := &st.rd
	if err := rd.BeginObject(); err != nil {
		return err
	}
	// seen[base+i] marks property i, seen[base+len(properties)+j]
	// required-only name j.
	base := len(st.seen)
	size := len(n.properties) + len(n.requiredOnly)
	st.seen = slices.Grow(st.seen, size)[:base+size]
	clear(st.seen[base:])
	count := 0
	for {
		key, more, err := rd.NextMember()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		count++
		if i, ok := n.propertyIndex(key); ok {
			st.seen[base+i] = true
			r.push(step{key: key, isKey: true})
			err = n.properties[i].schema.scan(r, st)
			r.pop()
		} else {
			for j, name := range n.requiredOnly {
				if name == key {
					st.seen[base+len(n.properties)+j] = true
				}
			}
			switch {
			case n.noAdditional:
				r.addAt(key, msgUnknown)
				err = rd.Skip()
			case n.additional != nil:
				r.push(step{key: key, isKey: true})
				err = n.additional.scan(r, st)
				r.pop()
			default:
				err = rd.Skip()
			}
		}
		if err != nil {
			return err
		}
	}
	if n.minProperties >= 0 && count < n.minProperties {
		r.report(&kind.MinProperties{Got: count, Want: n.minProperties})
	}
	if n.maxProperties >= 0 && count > n.maxProperties {
		r.report(&kind.MaxProperties{Got: count, Want: n.maxProperties})
	}
	for i := range n.properties {
		if p := &n.properties[i]; p.required && !st.seen[base+i] {
			r.addAt(p.name, msgMissing)
		}
	}
	for j, name := range n.requiredOnly {
		if !st.seen[base+len(n.properties)+j] {
			r.addAt(name, msgMissing)
		}
	}
	st.seen = st.seen[:base]
	return nil
}

func (n *nativeNode) scanArray(r *run, st *scanState) error {
	rd := &st.rd
	if err := rd.BeginArray(); err != nil {
		return err
	}
	count := 0
	for {
		more, err := rd.NextElement()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		r.push(step{index: count})
		if n.items != nil {
			err = n.items.scan(r, st)
		} else {
			err = rd.Skip()
		}
		r.pop()
		if err != nil {
			return err
		}
		count++
	}
	if n.minItems >= 0 && count < n.minItems {
		r.report(&kind.MinItems{Got: count, Want: n.minItems})
	}
	if n.maxItems >= 0 && count > n.maxItems {
		r.report(&kind.MaxItems{Got: count, Want: n.maxItems})
	}
	return nil
}

// propertyIndex finds name among the properties, which compileNode sorts.
func (n *nativeNode) propertyIndex(name string) (int, bool) {
	return slices.BinarySearchFunc(n.properties, name, func(p nativeProperty, name string) int {
		return strings.Compare(p.name, name)
	})
}

func typeOfKind(k jsonvalue.Kind) jsonType {
	switch k {
	case jsonvalue.KindNull:
		return typeNull
	case jsonvalue.KindBool:
		return typeBoolean
	case jsonvalue.KindNumber:
		return typeNumber
	case jsonvalue.KindString:
		return typeString
	case jsonvalue.KindArray:
		return typeArray
	case jsonvalue.KindObject:
		return typeObject
	}
	return typeInvalid
}
