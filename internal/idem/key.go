package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/oncecall/oncecall/internal/fault"
)

// MaxKeyLen is the longest Idempotency-Key accepted.
const MaxKeyLen = 255

// ValidateKey checks a caller-supplied idempotency key: 1 to 255 characters
// of printable ASCII (0x20-0x7E).
func ValidateKey(key string) error {
	if key == "" {
		return fault.New(fault.KeyInvalid, "Idempotency-Key must not be empty")
	}
	if len(key) > MaxKeyLen {
		return fault.New(fault.KeyInvalid, "Idempotency-Key must be at most %d characters", MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return fault.New(fault.KeyInvalid, "Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// KeyHash is a short, stable hash of a key for logs: enough to correlate
// attempts, never the key itself.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// derivedKeyPrefix starts every key DeriveKey builds (and a kept answer's
// key never does: see answers).
const derivedKeyPrefix = "derived:"

// DeriveKey builds an idempotency key from identity parts (tenant, operation,
// call, identity fields). It is a hash, so no customer data ends up in keys.
func DeriveKey(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		// Length-prefixed, so no choice of parts (a call id holding a NUL,
		// say) can make two different lists hash alike.
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return derivedKeyPrefix + hex.EncodeToString(h.Sum(nil))
}

// ProviderKey is the idempotency key a step sends to its provider: derived
// from the step's scope (the action id, or the tenant and business object a
// write may happen to once) and the step name, so every retry and every
// recovery by any worker uses the same key without inventing a new one.
func ProviderKey(scope, step string) string {
	sum := sha256.Sum256([]byte(scope + "/" + step))
	return "oc-" + hex.EncodeToString(sum[:20])
}
