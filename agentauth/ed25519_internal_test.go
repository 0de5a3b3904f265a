package agentauth

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// The verification in ed25519.go must agree with crypto/ed25519 on every
// input: these tests and FuzzEdKeyVerify compare the two.

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// agree checks that edKey.verify and ed25519.Verify give the same answer
// for pub, msg and sig, and returns it. A key newEdKey refuses must be one
// ed25519.Verify never accepts a signature for.
func agree(t testing.TB, pub, msg, sig []byte) bool {
	t.Helper()
	if len(pub) != ed25519.PublicKeySize {
		// ed25519.Verify panics on such keys; newEdKey must refuse them.
		if _, err := newEdKey(pub); err == nil {
			t.Fatalf("newEdKey accepted a %d-byte key", len(pub))
		}
		return false
	}
	want := ed25519.Verify(pub, msg, sig)
	k, err := newEdKey(pub)
	if err != nil {
		if want {
			t.Fatalf("newEdKey(%x) = %v, but ed25519.Verify accepts a signature for it", pub, err)
		}
		return false
	}
	if got := k.verify(msg, sig); got != want {
		t.Fatalf("verify(pub %x, msg %x, sig %x) = %v, ed25519.Verify = %v", pub, msg, sig, got, want)
	}
	return want
}

func TestEdKeyRFC8032Vectors(t *testing.T) {
	// RFC 8032 §7.1, tests 1 to 3.
	vectors := []struct{ pub, msg, sig string }{
		{
			"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
			"",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
		},
		{
			"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
			"72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
		},
		{
			"fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
			"af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
		},
	}
	for i, v := range vectors {
		pub, msg, sig := mustHex(t, v.pub), mustHex(t, v.msg), mustHex(t, v.sig)
		if !agree(t, pub, msg, sig) {
			t.Errorf("vector %d does not verify", i+1)
		}
		bad := bytes.Clone(msg)
		bad = append(bad, 0)
		if agree(t, pub, bad, sig) {
			t.Errorf("vector %d verifies a different message", i+1)
		}
	}
}

func TestEdKeyAgreesWithCryptoEd25519(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	seed := make([]byte, ed25519.SeedSize)
	for i := range 64 {
		fill(rng, seed)
		priv := ed25519.NewKeyFromSeed(seed)
		pub := priv.Public().(ed25519.PublicKey)
		msg := make([]byte, rng.IntN(300))
		fill(rng, msg)
		sig := ed25519.Sign(priv, msg)
		if !agree(t, pub, msg, sig) {
			t.Fatalf("round %d: a fresh signature does not verify", i)
		}
		// Every single-bit change of the signature, key or message.
		for bit := range 8 * len(sig) {
			m := bytes.Clone(sig)
			m[bit/8] ^= 1 << (bit % 8)
			agree(t, pub, msg, m)
		}
		for bit := range 8 * len(pub) {
			p := bytes.Clone(pub)
			p[bit/8] ^= 1 << (bit % 8)
			agree(t, p, msg, sig)
		}
		if len(msg) > 0 {
			m := bytes.Clone(msg)
			m[rng.IntN(len(m))] ^= byte(1 + rng.IntN(255))
			agree(t, pub, m, sig)
		}
		// Wrong lengths, and S made non-canonical by adding the group
		// order: the same point, refused by both.
		agree(t, pub, msg, sig[:63])
		agree(t, pub, msg, append(bytes.Clone(sig), 0))
		agree(t, pub, msg, withSPlusL(sig))
	}
}

// withSPlusL returns sig with S replaced by S + L, where L is the order of
// the base point: a signature that satisfies the group equation but whose
// S is not canonical.
func withSPlusL(sig []byte) []byte {
	l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}
	out := bytes.Clone(sig)
	var carry uint16
	for i := range 32 {
		sum := uint16(out[32+i]) + uint16(l[i]) + carry
		out[32+i] = byte(sum)
		carry = sum >> 8
	}
	return out
}

func TestEdKeySpecialPublicKeys(t *testing.T) {
	msg := []byte("agent+jwt")
	rng := rand.New(rand.NewChaCha8([32]byte{9}))
	sigs := make([][]byte, 8)
	for i := range sigs {
		sigs[i] = make([]byte, ed25519.SignatureSize)
		fill(rng, sigs[i])
		sigs[i][63] &= 0x0f
	}
	// An all-zero signature: R the point y = 0 (of order 4), S zero.
	sigs = append(sigs, make([]byte, ed25519.SignatureSize))
	identity := make([]byte, 32)
	identity[0] = 1
	sigs = append(sigs, append(bytes.Clone(identity), make([]byte, 32)...))

	keys := [][]byte{
		identity, // the neutral element (small order)
		mustHex(t, "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), // y = -1 (order 2)
		mustHex(t, "0000000000000000000000000000000000000000000000000000000000000080"), // x = 0 with the sign bit set
		mustHex(t, "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), // y = p: not canonical
		mustHex(t, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"),
		make([]byte, 31),
		make([]byte, 33),
		nil,
	}
	// Random 32-byte strings: about half are not points at all.
	for range 64 {
		k := make([]byte, 32)
		fill(rng, k)
		keys = append(keys, k)
	}
	refused := 0
	for _, k := range keys {
		if _, err := newEdKey(k); err != nil {
			refused++
		}
		for _, s := range sigs {
			agree(t, k, msg, s)
		}
	}
	if refused == 0 {
		t.Fatal("no key was refused: the invalid encodings were not exercised")
	}
	// An identity key with an identity R and S = 0 satisfies the
	// cofactorless equation; both implementations must accept it alike.
	agree(t, identity, msg, append(bytes.Clone(identity), make([]byte, 32)...))
}

// Small-order keys with S = 0 make the equation hold for an R that is the
// identity, so the two implementations must also agree on how R and the
// key are compared and hashed: R byte for byte (a non-canonical encoding
// of the right point is refused) and the key's bytes as given (not its
// canonical re-encoding).
func TestEdKeySmallOrderKeysAndNonCanonicalR(t *testing.T) {
	identity := make([]byte, 32)
	identity[0] = 1
	identitySigned := bytes.Clone(identity)
	identitySigned[31] = 0x80 // x = 0 with the sign bit: the identity again, not canonical
	order2Signed := mustHex(t, "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")
	zeroS := make([]byte, 32)
	accepted, refused := 0, 0
	for i := range 64 {
		msg := []byte{byte(i), 'm'}
		for _, pub := range [][]byte{identity, identitySigned, order2Signed} {
			for _, r := range [][]byte{identity, identitySigned} {
				if agree(t, pub, msg, append(bytes.Clone(r), zeroS...)) {
					accepted++
				} else {
					refused++
				}
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("accepted %d, refused %d: both outcomes must be exercised", accepted, refused)
	}
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

func FuzzEdKeyVerify(f *testing.F) {
	f.Add([]byte{1}, []byte("payload"), uint16(0), byte(0), []byte{})
	f.Add([]byte{2}, []byte(""), uint16(500), byte(0x80), []byte{})
	f.Add([]byte{3}, []byte("x"), uint16(0), byte(0), make([]byte, 32))
	f.Fuzz(func(t *testing.T, seed, msg []byte, flip uint16, mask byte, rawPub []byte) {
		var s [ed25519.SeedSize]byte
		copy(s[:], seed)
		priv := ed25519.NewKeyFromSeed(s[:])
		pub := priv.Public().(ed25519.PublicKey)
		sig := ed25519.Sign(priv, msg)
		sig[int(flip)%len(sig)] ^= mask
		agree(t, pub, msg, sig)
		if len(rawPub) > 0 {
			agree(t, rawPub, msg, sig)
		}
	})
}

func BenchmarkEdKeyVerify(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	msg := []byte("eyJhbGciOiJFZERTQSIsInR5cCI6ImFnZW50K2p3dCJ9.eyJzdWIiOiJhZ3RfMSJ9")
	sig := ed25519.Sign(priv, msg)
	k, err := newEdKey(pub)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("edKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !k.verify(msg, sig) {
				b.Fatal("bad signature")
			}
		}
	})
	b.Run("crypto_ed25519", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("bad signature")
			}
		}
	})
}
