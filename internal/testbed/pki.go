package testbed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its key, kept in memory while signing.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// certSpec describes a leaf certificate of the test PKI.
type certSpec struct {
	file string // base name: <file>.crt and <file>.key
	cn   string
	orgs []string
	usag []x509.ExtKeyUsage
	dns  []string
	ips  []net.IP
}

// apiserverSANs are the names a client may use for the API server, in the
// cluster and from the host.
var (
	apiserverDNS = []string{
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local",
	}
	apiserverIPs = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
)

func leafSpecs() []certSpec {
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return []certSpec{
		{file: "apiserver", cn: "kube-apiserver", usag: server, dns: apiserverDNS, ips: apiserverIPs},
		{file: "admin", cn: "kubernetes-admin", orgs: []string{"system:masters"}, usag: client},
		{file: "kcm", cn: "system:kube-controller-manager", usag: client},
		{file: "scheduler", cn: "system:kube-scheduler", usag: client},
		{
			file: "kwok", cn: "kwok", orgs: []string{"system:masters"},
			usag: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			dns:  []string{"localhost"}, ips: []net.IP{net.ParseIP("127.0.0.1")},
		},
	}
}

// writePKI creates every certificate and key the control plane needs in dir:
// ca, apiserver, admin, kcm, scheduler, kwok, front-proxy-ca,
// front-proxy-client (each .crt and .key) and the service-account key pair
// sa.key and sa.pub.
func writePKI(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create pki dir: %w", err)
	}
	ca, err := newCA("windlass-testbed-ca")
	if err != nil {
		return err
	}
	if err := writePair(dir, "ca", ca); err != nil {
		return err
	}
	for _, s := range leafSpecs() {
		kp, err := newLeaf(ca, s)
		if err != nil {
			return fmt.Errorf("issue %s certificate: %w", s.file, err)
		}
		if err := writePair(dir, s.file, kp); err != nil {
			return err
		}
	}

	fpCA, err := newCA("windlass-testbed-front-proxy-ca")
	if err != nil {
		return err
	}
	if err := writePair(dir, "front-proxy-ca", fpCA); err != nil {
		return err
	}
	fp, err := newLeaf(fpCA, certSpec{cn: "front-proxy-client", usag: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return fmt.Errorf("issue front-proxy-client certificate: %w", err)
	}
	if err := writePair(dir, "front-proxy-client", fp); err != nil {
		return err
	}

	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate service-account key: %w", err)
	}
	if err := writeKey(filepath.Join(dir, "sa.key"), sa); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return fmt.Errorf("marshal service-account public key: %w", err)
	}
	return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub, 0o644)
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

func newCA(cn string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate %s key: %w", cn, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create %s certificate: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse %s certificate: %w", cn, err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

func newLeaf(ca *keyPair, s certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           s.usag,
		BasicConstraintsValid: true,
		DNSNames:              s.dns,
		IPAddresses:           s.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

func writePair(dir, name string, kp *keyPair) error {
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", kp.cert.Raw, 0o644); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), kp.key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key %s: %w", filepath.Base(path), err)
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
