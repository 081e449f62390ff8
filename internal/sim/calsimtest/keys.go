package calsimtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"sync"
)

var (
	keyOnce sync.Once
	keyPEM  []byte
	keyErr  error
)

// GoogleKey is a Google service account key file (JSON) whose token_uri is
// the google fake's token endpoint (<URL>/token), with an RSA key made
// once per process: the fake checks the grant's claims, not its signature.
func GoogleKey(tokenURI string) ([]byte, error) {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			keyErr = err
			return
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			keyErr = err
			return
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	})
	if keyErr != nil {
		return nil, keyErr
	}
	return json.Marshal(map[string]string{
		"type": "service_account", "project_id": "oncecall-test", "private_key_id": "k1", "private_key": string(keyPEM),
		"client_email": "oncecall@oncecall-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI,
	})
}
