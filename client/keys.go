package client

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-jose/go-jose/v4"
)

// ErrKeyNotFound is returned (possibly wrapped) by a KeyStore for a name
// it holds no key under.
var ErrKeyNotFound = errors.New("client: key not found")

// KeyStore keeps the client's private keys: host keys and agent keys.
// Implementations must be safe for concurrent use. Names are made of
// ASCII letters, digits, '-', '_' and '.', and never start with '.'.
type KeyStore interface {
	// Load returns the key saved under name, or an error wrapping
	// ErrKeyNotFound.
	Load(ctx context.Context, name string) (ed25519.PrivateKey, error)
	// Save stores key under name, replacing any key saved there.
	Save(ctx context.Context, name string, key ed25519.PrivateKey) error
	// Delete removes the key saved under name. Deleting a missing key is
	// not an error.
	Delete(ctx context.Context, name string) error
}

// Identity is an Ed25519 key pair with its RFC 7638 thumbprint, the
// identifier Agent Auth gives keys.
type Identity struct {
	Key        ed25519.PrivateKey
	Thumbprint string
}

// NewIdentity returns the identity of key.
func NewIdentity(key ed25519.PrivateKey) (*Identity, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("client: not an Ed25519 private key")
	}
	tp, err := Thumbprint(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &Identity{Key: key, Thumbprint: tp}, nil
}

// GenerateIdentity creates a fresh identity from rand (crypto/rand when
// nil).
func GenerateIdentity(rand io.Reader) (*Identity, error) {
	_, key, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, fmt.Errorf("client: generate key: %w", err)
	}
	return NewIdentity(key)
}

// PublicJWK returns the public key as a JWK with its thumbprint as kid,
// the form sent to providers. The kid lets a provider find the host by
// the identifier the host's tokens carry in iss.
func (id *Identity) PublicJWK() map[string]string {
	return map[string]string{
		"kty": "OKP",
		"crv": "Ed25519",
		"x":   base64.RawURLEncoding.EncodeToString(id.Key.Public().(ed25519.PublicKey)),
		"kid": id.Thumbprint,
	}
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint of an Ed25519 public
// key, base64url without padding.
func Thumbprint(pub ed25519.PublicKey) (string, error) {
	if len(pub) != ed25519.PublicKeySize {
		return "", errors.New("client: not an Ed25519 public key")
	}
	jwk := jose.JSONWebKey{Key: pub}
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("client: thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// loadOrCreate returns the identity saved under name, creating and saving
// a fresh one when there is none.
func loadOrCreate(ctx context.Context, ks KeyStore, name string, rand io.Reader) (*Identity, error) {
	key, err := ks.Load(ctx, name)
	if err == nil {
		return NewIdentity(key)
	}
	if !errors.Is(err, ErrKeyNotFound) {
		return nil, err
	}
	id, err := GenerateIdentity(rand)
	if err != nil {
		return nil, err
	}
	if err := ks.Save(ctx, name, id.Key); err != nil {
		return nil, err
	}
	return id, nil
}

func checkKeyName(name string) error {
	if name == "" || len(name) > 200 || name[0] == '.' {
		return fmt.Errorf("client: invalid key name %q", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return fmt.Errorf("client: invalid key name %q", name)
		}
	}
	return nil
}

// MemoryKeyStore is a KeyStore held in memory, for tests and for
// ephemeral agents whose keys may be lost with the process.
type MemoryKeyStore struct {
	mu   sync.Mutex
	keys map[string]ed25519.PrivateKey
}

// NewMemoryKeyStore returns an empty MemoryKeyStore.
func NewMemoryKeyStore() *MemoryKeyStore {
	return &MemoryKeyStore{keys: map[string]ed25519.PrivateKey{}}
}

// Load implements KeyStore.
func (m *MemoryKeyStore) Load(_ context.Context, name string) (ed25519.PrivateKey, error) {
	if err := checkKeyName(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrKeyNotFound, name)
	}
	return append(ed25519.PrivateKey(nil), k...), nil
}

// Save implements KeyStore.
func (m *MemoryKeyStore) Save(_ context.Context, name string, key ed25519.PrivateKey) error {
	if err := checkKeyName(name); err != nil {
		return err
	}
	if len(key) != ed25519.PrivateKeySize {
		return errors.New("client: not an Ed25519 private key")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[name] = append(ed25519.PrivateKey(nil), key...)
	return nil
}

// Delete implements KeyStore.
func (m *MemoryKeyStore) Delete(_ context.Context, name string) error {
	if err := checkKeyName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, name)
	return nil
}

// Names returns the names of the keys held, in no particular order.
func (m *MemoryKeyStore) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.keys))
	for n := range m.keys {
		names = append(names, n)
	}
	return names
}

// FileKeyStore keeps each key in its own file, Dir/<name>.jwk, as a
// private JWK readable and writable by the owner only (mode 0600, in a
// directory of mode 0700). Files are replaced atomically, so a crash never
// leaves half a key.
type FileKeyStore struct {
	Dir string
}

// defaultKeyDir returns the directory of the default FileKeyStore:
// agentcap/keys under the user's configuration directory.
func defaultKeyDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("client: no configuration directory: %w", err)
	}
	return filepath.Join(dir, "agentcap", "keys"), nil
}

func (f FileKeyStore) path(name string) (string, error) {
	if f.Dir == "" {
		return "", errors.New("client: FileKeyStore without a directory")
	}
	if err := checkKeyName(name); err != nil {
		return "", err
	}
	return filepath.Join(f.Dir, name+".jwk"), nil
}

// Load implements KeyStore. A file that other users may read is refused:
// the key may have leaked, and using it silently would hide that.
func (f FileKeyStore) Load(_ context.Context, name string) (ed25519.PrivateKey, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	file, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrKeyNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("client: read key: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("client: read key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("client: key file %s is accessible to other users (mode %v)", p, st.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(file, 4096))
	if err != nil {
		return nil, fmt.Errorf("client: read key: %w", err)
	}
	key, err := ParsePrivateJWK(data)
	if err != nil {
		return nil, fmt.Errorf("client: key file %s: %w", p, err)
	}
	return key, nil
}

// Save implements KeyStore.
func (f FileKeyStore) Save(_ context.Context, name string, key ed25519.PrivateKey) error {
	p, err := f.path(name)
	if err != nil {
		return err
	}
	data, err := MarshalPrivateJWK(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("client: key directory: %w", err)
	}
	return writeFileAtomic(p, data)
}

// Delete implements KeyStore.
func (f FileKeyStore) Delete(_ context.Context, name string) error {
	p, err := f.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("client: delete key: %w", err)
	}
	return nil
}

// writeFileAtomic writes data to a temporary file of mode 0600 next to
// path and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("client: write %s: %w", path, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("client: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("client: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("client: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("client: write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("client: write %s: %w", path, err)
	}
	ok = true
	return nil
}

// privateJWK is the stored form of an Ed25519 private key (RFC 8037).
type privateJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	D   string `json:"d"`
}

// MarshalPrivateJWK encodes an Ed25519 private key as a JWK (RFC 8037)
// with kty, crv, x and d.
func MarshalPrivateJWK(key ed25519.PrivateKey) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("client: not an Ed25519 private key")
	}
	return json.Marshal(privateJWK{
		Kty: "OKP",
		Crv: "Ed25519",
		X:   base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
		D:   base64.RawURLEncoding.EncodeToString(key.Seed()),
	})
}

// ParsePrivateJWK decodes an Ed25519 private JWK. The public member x must
// match the private seed d, so a corrupted or tampered file is detected.
func ParsePrivateJWK(data []byte) (ed25519.PrivateKey, error) {
	var k privateJWK
	if err := json.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("not a JWK: %w", err)
	}
	if k.Kty != "OKP" || k.Crv != "Ed25519" {
		return nil, fmt.Errorf("not an Ed25519 key (kty %q, crv %q)", k.Kty, k.Crv)
	}
	seed, err := base64.RawURLEncoding.DecodeString(k.D)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("bad private key member d")
	}
	x, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, errors.New("bad public key member x")
	}
	key := ed25519.NewKeyFromSeed(seed)
	if !key.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(x)) {
		return nil, errors.New("public key x does not match private key d")
	}
	return key, nil
}
