package jsonvalue_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

var (
	smallDoc = []byte(`{"account":"DE89370400440532013000","amount":125.50,"memo":"rent"}`)

	// nestedDoc has 20 fields spread over nested objects and arrays, the
	// shape of a larger capability input.
	nestedDoc = []byte(`{
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
	}`)
)

func BenchmarkParse(b *testing.B) {
	for _, doc := range []struct {
		name string
		data []byte
	}{{"small", smallDoc}, {"nested20", nestedDoc}} {
		b.Run(doc.name+"/jsonvalue", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				if _, err := jsonvalue.Parse(doc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/jsonvalue-object", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				if _, _, err := jsonvalue.ParseObject(doc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			for b.Loop() {
				dec := json.NewDecoder(bytes.NewReader(doc.data))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReader reads the documents with a reused Reader, building
// nothing: what a validator of text pays for the reading itself.
func BenchmarkReader(b *testing.B) {
	for _, doc := range []struct {
		name string
		data []byte
	}{{"small", smallDoc}, {"nested20", nestedDoc}} {
		b.Run(doc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.data)))
			var r jsonvalue.Reader
			for b.Loop() {
				r.Reset(doc.data)
				if err := r.Skip(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
