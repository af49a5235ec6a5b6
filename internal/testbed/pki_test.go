package testbed

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s: no CERTIFICATE block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func readKey(t *testing.T, path string) *ecdsa.PrivateKey {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	if err := writePKI(dir); err != nil {
		t.Fatal(err)
	}
	pool := func(name string) *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(readCert(t, filepath.Join(dir, name+".crt")))
		return p
	}
	tests := []struct {
		name    string
		ca      string
		usage   x509.ExtKeyUsage
		dnsName string // verified when set
		orgs    []string
		cn      string
	}{
		{name: "apiserver", ca: "ca", usage: x509.ExtKeyUsageServerAuth, dnsName: "kubernetes.default.svc", cn: "kube-apiserver"},
		{name: "apiserver", ca: "ca", usage: x509.ExtKeyUsageServerAuth, dnsName: "localhost", cn: "kube-apiserver"},
		{name: "apiserver", ca: "ca", usage: x509.ExtKeyUsageServerAuth, dnsName: "10.96.0.1", cn: "kube-apiserver"},
		{name: "apiserver", ca: "ca", usage: x509.ExtKeyUsageServerAuth, dnsName: "127.0.0.1", cn: "kube-apiserver"},
		{name: "admin", ca: "ca", usage: x509.ExtKeyUsageClientAuth, orgs: []string{"system:masters"}, cn: "kubernetes-admin"},
		{name: "kcm", ca: "ca", usage: x509.ExtKeyUsageClientAuth, cn: "system:kube-controller-manager"},
		{name: "scheduler", ca: "ca", usage: x509.ExtKeyUsageClientAuth, cn: "system:kube-scheduler"},
		{name: "kwok", ca: "ca", usage: x509.ExtKeyUsageClientAuth, orgs: []string{"system:masters"}, cn: "kwok"},
		{name: "kwok", ca: "ca", usage: x509.ExtKeyUsageServerAuth, dnsName: "127.0.0.1", orgs: []string{"system:masters"}, cn: "kwok"},
		{name: "front-proxy-client", ca: "front-proxy-ca", usage: x509.ExtKeyUsageClientAuth, cn: "front-proxy-client"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.dnsName, func(t *testing.T) {
			cert := readCert(t, filepath.Join(dir, tt.name+".crt"))
			key := readKey(t, filepath.Join(dir, tt.name+".key"))
			if !key.PublicKey.Equal(cert.PublicKey) {
				t.Error("key does not match certificate")
			}
			if cert.Subject.CommonName != tt.cn {
				t.Errorf("CN %q, want %q", cert.Subject.CommonName, tt.cn)
			}
			if !slices.Equal(cert.Subject.Organization, tt.orgs) {
				t.Errorf("O %v, want %v", cert.Subject.Organization, tt.orgs)
			}
			_, err := cert.Verify(x509.VerifyOptions{
				Roots:     pool(tt.ca),
				DNSName:   tt.dnsName,
				KeyUsages: []x509.ExtKeyUsage{tt.usage},
			})
			if err != nil {
				t.Errorf("verify: %v", err)
			}
		})
	}

	t.Run("front-proxy-client is not trusted by the main CA", func(t *testing.T) {
		cert := readCert(t, filepath.Join(dir, "front-proxy-client.crt"))
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool("ca"), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
			t.Error("verified against the wrong CA")
		}
	})
	t.Run("service-account key pair", func(t *testing.T) {
		key := readKey(t, filepath.Join(dir, "sa.key"))
		data, err := os.ReadFile(filepath.Join(dir, "sa.pub"))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		if block == nil || block.Type != "PUBLIC KEY" {
			t.Fatal("sa.pub: no PUBLIC KEY block")
		}
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if !key.PublicKey.Equal(pub) {
			t.Error("sa.pub does not match sa.key")
		}
	})
}
