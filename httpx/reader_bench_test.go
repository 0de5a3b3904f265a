package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcap/agentcap/internal/benchcpu"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// The reading an execute request gets, done two ways: by the readers of
// this module (the envelope scanner, then jsonvalue.ParseObject building
// the tree and the raw members the executor validates and decodes), and
// by jsontext, the token reader of github.com/go-json-experiment/json,
// doing the same work: the envelope's members read and checked, the
// arguments turned into the same tree (json.Number for numbers) with their
// raw members. BENCHMARKS.md reports the comparison.

var readerBodies = []struct{ name, body string }{
	{"small", `{"capability":"transfer","arguments":{"account":"DE89370400440532013000","amount":125.50,"memo":"rent"}}`},
	{"nested20", `{"capability":"invoice","arguments":{
		"id": "inv_2024_000183",
		"customer": {"name": "Ada Lovelace", "email": "ada@example.com", "vip": true},
		"currency": "EUR",
		"total": 1249.99,
		"lines": [
			{"sku": "A-100", "qty": 2, "price": 499.5, "note": "gift wrap\n"},
			{"sku": "B-200", "qty": 1, "price": 250.99, "note": null}
		],
		"shipping": {"street": "1 Analytical Way", "city": "London", "zip": "N1 9GU", "country": "GB"},
		"tags": ["priority", "export"],
		"paid": false,
		"due": "2024-07-01T00:00:00Z",
		"attempts": 0
	}}`},
}

func BenchmarkExecuteReading(b *testing.B) {
	for _, tc := range readerBodies {
		body := []byte(tc.body)
		b.Run(tc.name+"/handwritten", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			defer benchcpu.Report(b)()
			for b.Loop() {
				name, args, _, err := parseExecute(body)
				if err != nil || name == "" {
					b.Fatal(err)
				}
				if _, _, err := jsonvalue.ParseObject(args); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/jsontext", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var r jsontextReader
			defer benchcpu.Report(b)()
			for b.Loop() {
				name, args, err := r.envelope(body)
				if err != nil || name == "" {
					b.Fatal(err)
				}
				if _, _, err := r.object(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEnvelopeReading times the envelope alone: every byte of the
// body checked, the capability name and the raw arguments found.
func BenchmarkEnvelopeReading(b *testing.B) {
	for _, tc := range readerBodies {
		body := []byte(tc.body)
		b.Run(tc.name+"/handwritten", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			defer benchcpu.Report(b)()
			for b.Loop() {
				if name, _, _, err := parseExecute(body); err != nil || name == "" {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/jsontext", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var r jsontextReader
			defer benchcpu.Report(b)()
			for b.Loop() {
				if name, _, err := r.envelope(body); err != nil || name == "" {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJSONTextReaderAgrees checks that the jsontext contender of the
// benchmarks does the same work: the same name, arguments and tree.
func TestJSONTextReaderAgrees(t *testing.T) {
	var r jsontextReader
	for _, tc := range readerBodies {
		body := []byte(tc.body)
		name, args, _, perr := parseExecute(body)
		tree, members, err := jsonvalue.ParseObject(args)
		if perr != nil || err != nil {
			t.Fatal(perr, err)
		}
		name2, args2, err := r.envelope(body)
		if err != nil {
			t.Fatal(err)
		}
		tree2, members2, err := r.object(args2)
		if err != nil {
			t.Fatal(err)
		}
		if name != name2 || !bytes.Equal(args, args2) {
			t.Errorf("%s: envelope %q %s, jsontext %q %s", tc.name, name, args, name2, args2)
		}
		if got, want := string(jsonvalue.Append(nil, tree2)), string(jsonvalue.Append(nil, tree)); got != want {
			t.Errorf("%s: tree %s, want %s", tc.name, got, want)
		}
		if len(members) != len(members2) {
			t.Fatalf("%s: %d members, want %d", tc.name, len(members2), len(members))
		}
		for k, v := range members {
			if !bytes.Equal(v, members2[k]) {
				t.Errorf("%s: member %q %s, want %s", tc.name, k, members2[k], v)
			}
		}
	}
}

// jsontextReader reads execute requests with jsontext, reusing its
// decoders and buffers across requests as a server would.
type jsontextReader struct {
	buf, argBuf bytes.Buffer
	dec, argDec jsontext.Decoder
}

var errEnvelope = errors.New("not an execute envelope")

// envelope reads {"capability": name, "arguments": {...}}; duplicate
// names are refused by jsontext itself.
func (r *jsontextReader) envelope(body []byte) (name string, args []byte, err error) {
	r.buf.Reset()
	r.buf.Write(body)
	r.dec.Reset(&r.buf)
	d := &r.dec
	tok, err := d.ReadToken()
	if err != nil {
		return "", nil, err
	}
	if tok.Kind() != '{' {
		return "", nil, errEnvelope
	}
	for d.PeekKind() == '"' {
		key, err := d.ReadToken()
		if err != nil {
			return "", nil, err
		}
		switch key.String() {
		case "capability":
			v, err := d.ReadToken()
			if err != nil {
				return "", nil, err
			}
			if v.Kind() != '"' {
				return "", nil, errEnvelope
			}
			name = v.String()
		case "arguments":
			v, err := d.ReadValue()
			if err != nil {
				return "", nil, err
			}
			// The value aliases the decoder's buffer, which holds the
			// whole body: the offsets give the body's own bytes.
			end := int(d.InputOffset())
			args = body[end-len(v) : end : end]
		default:
			return "", nil, errEnvelope
		}
	}
	if tok, err = d.ReadToken(); err != nil {
		return "", nil, err
	}
	if tok.Kind() != '}' {
		return "", nil, errEnvelope
	}
	if _, err := d.ReadToken(); err == nil {
		return "", nil, errEnvelope
	}
	return name, args, nil
}

// object builds the tree of a JSON object and its raw members.
func (r *jsontextReader) object(data []byte) (map[string]any, map[string]json.RawMessage, error) {
	r.argBuf.Reset()
	r.argBuf.Write(data)
	r.argDec.Reset(&r.argBuf)
	d := &r.argDec
	tok, err := d.ReadToken()
	if err != nil {
		return nil, nil, err
	}
	if tok.Kind() != '{' {
		return nil, nil, errEnvelope
	}
	obj := map[string]any{}
	members := map[string]json.RawMessage{}
	for d.PeekKind() == '"' {
		key, err := d.ReadToken()
		if err != nil {
			return nil, nil, err
		}
		k := key.String()
		start := int(d.InputOffset())
		v, err := readTree(d)
		if err != nil {
			return nil, nil, err
		}
		end := int(d.InputOffset())
		raw := bytes.TrimLeft(data[start:end], " \t\r\n:")
		obj[k] = v
		members[k] = raw[:len(raw):len(raw)]
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, nil, err
	}
	if _, err := d.ReadToken(); err == nil {
		return nil, nil, errEnvelope
	}
	return obj, members, nil
}

func readTree(d *jsontext.Decoder) (any, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case '[':
		a := []any{}
		for d.PeekKind() != ']' {
			v, err := readTree(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.ReadToken()
		return a, err
	case '{':
		m := map[string]any{}
		for d.PeekKind() != '}' {
			key, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			k := key.String()
			v, err := readTree(d)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		_, err := d.ReadToken()
		return m, err
	}
	return nil, errEnvelope
}
