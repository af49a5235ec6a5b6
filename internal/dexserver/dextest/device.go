package dextest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
)

// DeviceLogin runs the OAuth device flow of the public client clientID
// at the issuer (endpoints from Dex's layout: /device/code and /token),
// with a PKCE S256 challenge: it asks for a device code, lets b enter the
// user code and log in, then redeems the device code at once (no polling)
// and returns the raw ID token.
func DeviceLogin(ctx context.Context, b *Browser, issuer, clientID string) (string, error) {
	hc := &http.Client{}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	cfg := oauth2.Config{
		ClientID: clientID, Scopes: []string{"openid", "profile", "email", "groups"},
		Endpoint: oauth2.Endpoint{DeviceAuthURL: issuer + "/device/code", TokenURL: issuer + "/token", AuthStyle: oauth2.AuthStyleInParams},
	}
	verifier := oauth2.GenerateVerifier()
	da, err := cfg.DeviceAuth(ctx, oauth2.S256ChallengeOption(verifier))
	if err != nil {
		return "", fmt.Errorf("device code: %w", err)
	}
	page, err := b.Visit(ctx, da.VerificationURIComplete, func(*url.URL) bool { return false })
	if err != nil {
		return "", fmt.Errorf("enter the user code: %w", err)
	}
	if page.Status != http.StatusOK || !strings.Contains(page.URL.Path, "/device/callback") {
		return "", fmt.Errorf("the device login ended at %s with %d: %.300s", page.URL, page.Status, page.Body)
	}
	form := url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {da.DeviceCode},
		"client_id": {clientID}, "code_verifier": {verifier},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("redeem the device code: %w", err)
	}
	defer res.Body.Close()
	var answer struct {
		IDToken string `json:"id_token"`
		Error   string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil || answer.IDToken == "" {
		return "", fmt.Errorf("redeem the device code: %d %s %v", res.StatusCode, answer.Error, err)
	}
	raw := answer.IDToken
	return raw, nil
}
