package agentauth

import (
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/subtle"
	"errors"

	"filippo.io/edwards25519"
)

// edKey is an Ed25519 public key whose curve point is decoded once.
//
// ed25519.Verify decompresses the public key on every call, which costs a
// field inversion's worth of work (about 7 % of a verification). A
// resource server checks many tokens of the same few agents, so the
// Verifier keeps the decoded point with each cached inline key and checks
// signatures with the RFC 8032 §5.1.7 equation directly. The check is the
// one crypto/ed25519 performs for plain Ed25519 (no context, no
// pre-hash): S must be canonical, the public key a valid point encoding,
// and [S]B - [k]A must encode to R byte for byte (the cofactorless
// equation). ed25519_internal_test.go compares it with ed25519.Verify on
// valid, mutated and malformed inputs, and a fuzz target keeps doing so.
type edKey struct {
	pub  ed25519.PublicKey
	negA edwards25519.Point // -A, ready for the double scalar multiplication
}

// errNotCurvePoint is a 32-byte Ed25519 public key that encodes no curve
// point: no signature verifies under it.
var errNotCurvePoint = errors.New("ed25519 public key is not a point on the curve")

// newEdKey decodes pub. It fails when pub is not 32 bytes or not the
// encoding of a point on the curve (errNotCurvePoint), the keys
// ed25519.Verify never accepts a signature for.
func newEdKey(pub ed25519.PublicKey) (*edKey, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("ed25519 public key is not 32 bytes")
	}
	a, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return nil, errNotCurvePoint
	}
	k := &edKey{pub: pub}
	k.negA.Negate(a)
	return k, nil
}

// verify reports whether sig is k's valid signature of msg, exactly as
// ed25519.Verify(k.pub, msg, sig) would.
func (k *edKey) verify(msg, sig []byte) bool {
	// The top three bits of S are always zero in a canonical scalar; the
	// early exit matches crypto/ed25519.
	if len(sig) != ed25519.SignatureSize || sig[63]&0xe0 != 0 {
		return false
	}
	s, err := new(edwards25519.Scalar).SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(k.pub)
	h.Write(msg)
	var digest [sha512.Size]byte
	kh, err := new(edwards25519.Scalar).SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false
	}
	// [S]B = R + [k]A, checked as [k](-A) + [S]B == R.
	var r edwards25519.Point
	r.VarTimeDoubleScalarBaseMult(kh, &k.negA, s)
	return subtle.ConstantTimeCompare(r.Bytes(), sig[:32]) == 1
}
