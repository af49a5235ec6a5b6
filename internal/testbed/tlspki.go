package testbed

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
)

// TLSPKI is a private CA with a server certificate for 127.0.0.1 and
// localhost and a client certificate, in PEM: for servers the tests start
// with a CA the system does not trust.
type TLSPKI struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewTLSPKI makes a new CA and its two leaves.
func NewTLSPKI() (*TLSPKI, error) {
	ca, err := newCA("windlass-test-ca")
	if err != nil {
		return nil, err
	}
	srv, err := newLeaf(ca, certSpec{cn: "windlass-test-server", usag: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		dns: []string{"localhost"}, ips: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return nil, err
	}
	cli, err := newLeaf(ca, certSpec{cn: "windlass-test-client", usag: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, err
	}
	p := &TLSPKI{CA: certPEM(ca)}
	if p.ServerCert, p.ServerKey, err = pairPEM(srv); err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, err = pairPEM(cli); err != nil {
		return nil, err
	}
	return p, nil
}

// ServerConfig is a server TLS configuration with the server
// certificate; with requireClient it demands a client certificate
// signed by the CA.
func (p *TLSPKI) ServerConfig(requireClient bool) (*tls.Config, error) {
	cert, err := tls.X509KeyPair([]byte(p.ServerCert), []byte(p.ServerKey))
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if requireClient {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(p.CA))
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

func certPEM(kp *keyPair) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw}))
}

func pairPEM(kp *keyPair) (cert, key string, err error) {
	der, err := x509.MarshalECPrivateKey(kp.key)
	if err != nil {
		return "", "", fmt.Errorf("marshal key: %w", err)
	}
	return certPEM(kp), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})), nil
}
