package notifytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is one recorded message.
type Mail struct {
	From string
	To   []string
	Data string
	// TLS and User say whether the session used STARTTLS and who logged in.
	TLS  bool
	User string
}

// SMTP is an SMTP server on loopback with STARTTLS (a self-signed
// certificate) and PLAIN auth for User and Password.
type SMTP struct {
	Host     string
	Port     int
	User     string
	Password string

	mu    sync.Mutex
	mails []Mail
}

// NewSMTP starts the server, stopped when the test ends.
func NewSMTP(t testing.TB, user, password string) *SMTP {
	t.Helper()
	return serve(t, &SMTP{User: user, Password: password}, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}})
}

// NewPlainSMTP starts a server without TLS or auth.
func NewPlainSMTP(t testing.TB) *SMTP {
	t.Helper()
	return serve(t, &SMTP{}, nil)
}

func serve(t testing.TB, s *SMTP, tc *tls.Config) *SMTP {
	t.Helper()
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.TLSConfig = tc
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.Host, s.Port = "127.0.0.1", l.Addr().(*net.TCPAddr).Port
	return s
}

// Addr is host:port.
func (s *SMTP) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Mails returns the messages so far.
func (s *SMTP) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

// Wait waits until at least n messages arrived and returns them.
func (s *SMTP) Wait(t testing.TB, n int, timeout time.Duration) []Mail {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(s.Mails()) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	m := s.Mails()
	if len(m) < n {
		t.Fatalf("%d mails, want %d", len(m), n)
	}
	return m
}

type backend struct{ s *SMTP }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s    *SMTP
	conn *smtp.Conn
	user string
	m    Mail
}

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != ss.s.User || pass != ss.s.Password {
			return errors.New("invalid credentials")
		}
		ss.user = user
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.Password != "" && ss.user == "" {
		return &smtp.SMTPError{Code: 530, Message: "authentication required"}
	}
	ss.m = Mail{From: from}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.m.To = append(ss.m.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.m.Data = string(b)
	_, ss.m.TLS = ss.conn.TLSConnectionState()
	ss.m.User = ss.user
	ss.s.mu.Lock()
	ss.s.mails = append(ss.s.mails, ss.m)
	ss.s.mu.Unlock()
	return nil
}

func (ss *session) Reset()        { ss.m = Mail{} }
func (ss *session) Logout() error { return nil }

func selfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
