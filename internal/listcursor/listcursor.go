// Package listcursor holds the list cursors of httpx's capability listing
// and mcpx's tools/list: the base64url encoding (no padding) of the last
// name on the previous page. Names are unique and listed in order, so the
// next page starts after it, and capabilities added or hidden between two
// calls cannot shift a page.
package listcursor

import "encoding/base64"

// Encode returns the cursor of a page that ended with name.
func Encode(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// Decode returns the name a cursor holds; false for a cursor this package
// did not make. Each name has one cursor: another spelling that decodes
// to the same bytes (with line breaks, which base64 decoding skips, or
// unused trailing bits set) is refused.
func Decode(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 || Encode(string(b)) != c {
		return "", false
	}
	return string(b), true
}
