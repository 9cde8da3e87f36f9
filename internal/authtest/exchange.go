package authtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Token exchange (RFC 8693): a client trades an access token this server
// issued (the subject token) for one for another resource, on behalf of
// the same subject. The new token's sub is the subject token's, its aud
// the requested resource, and its act claim names the client (section 4.1).

// GrantTokenExchange is the token exchange grant type.
const GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

// TokenTypeAccessToken is RFC 8693's identifier of an OAuth access token.
const TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// exchangeToken is the token exchange grant, for confidential clients.
func (as *Server) exchangeToken(w http.ResponseWriter, r *http.Request, client string, c Client) {
	if c.Secret == "" {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "token exchange needs a confidential client")
		return
	}
	if t := r.PostFormValue("subject_token_type"); t != TokenTypeAccessToken {
		oauthError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("subject_token_type %q is not an access token", t))
		return
	}
	if t := r.PostFormValue("requested_token_type"); t != "" && t != TokenTypeAccessToken {
		oauthError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("requested_token_type %q: this server issues access tokens", t))
		return
	}
	resource := r.PostFormValue("resource")
	if resource == "" {
		resource = r.PostFormValue("audience")
	}
	if resource == "" {
		oauthError(w, http.StatusBadRequest, "invalid_target", "name the resource or audience the token is for")
		return
	}
	sub, exp, err := as.verify(r.PostFormValue("subject_token"))
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "subject_token: "+err.Error())
		return
	}
	scope := r.PostFormValue("scope")
	if scope == "" {
		scope = "mcp:tools"
	}
	as.mu.Lock()
	life := as.code.lifetime
	as.code.seq++
	jti := fmt.Sprintf("xt-%d", as.code.seq)
	as.mu.Unlock()
	// Never past the subject token: the exchange does not extend a session.
	end := time.Now().Add(life)
	if exp.Before(end) {
		end = exp
	}
	claims := as.Claims(sub, resource, map[string]any{"scope": scope, "exp": end.Unix(), "jti": jti, "client_id": client, "act": map[string]any{"sub": client}})
	tok, err := as.sign(claims, nil)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	as.mu.Lock()
	as.code.access[tok] = &issuedAccess{}
	as.code.secrets = append(as.code.secrets, tok)
	as.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "issued_token_type": TokenTypeAccessToken, "token_type": "Bearer",
		"expires_in": int(time.Until(end).Seconds()), "scope": scope})
}

// verify checks that token is an unexpired access token this server
// signed, and returns its subject and expiry.
func (as *Server) verify(token string) (string, time.Time, error) {
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", time.Time{}, err
	}
	as.mu.Lock()
	keys := append([]jose.JSONWebKey(nil), as.keys...)
	as.mu.Unlock()
	for _, k := range keys {
		var c jwt.Claims
		if parsed.Claims(k.Public().Key, &c) != nil {
			continue
		}
		if err := c.ValidateWithLeeway(jwt.Expected{Issuer: as.URL, Time: time.Now()}, 0); err != nil {
			return "", time.Time{}, err
		}
		if as.Revoked(token) {
			return "", time.Time{}, fmt.Errorf("revoked")
		}
		if strings.TrimSpace(c.Subject) == "" || c.Expiry == nil {
			return "", time.Time{}, fmt.Errorf("no sub or exp")
		}
		return c.Subject, c.Expiry.Time(), nil
	}
	return "", time.Time{}, fmt.Errorf("not signed by this server")
}

// checkAssertion authenticates a private_key_jwt client (RFC 7523 section
// 2.2 and 3): the assertion is signed with its key, names it as iss and
// sub, this token endpoint as aud, and is unexpired and not replayed.
func (as *Server) checkAssertion(r *http.Request, id string, c Client) error {
	if c.AssertionKey == nil {
		return fmt.Errorf("client %q is not a private_key_jwt client", id)
	}
	if r.PostFormValue("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return fmt.Errorf("client_assertion_type %q", r.PostFormValue("client_assertion_type"))
	}
	tok, err := jwt.ParseSigned(r.PostFormValue("client_assertion"), []jose.SignatureAlgorithm{jose.SignatureAlgorithm(c.AssertionKey.Algorithm)})
	if err != nil {
		return fmt.Errorf("client_assertion: %v", err)
	}
	var claims jwt.Claims
	if err := tok.Claims(c.AssertionKey.Key, &claims); err != nil {
		return fmt.Errorf("client_assertion signature: %v", err)
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: id, Subject: id, AnyAudience: jwt.Audience{as.URL + "/token", as.URL}, Time: time.Now()}, 0); err != nil {
		return fmt.Errorf("client_assertion claims: %v", err)
	}
	if claims.Expiry == nil || claims.ID == "" {
		return fmt.Errorf("client_assertion lacks exp or jti")
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.code.assertions == nil {
		as.code.assertions = map[string]bool{}
	}
	if as.code.assertions[claims.ID] {
		return fmt.Errorf("client_assertion jti %q replayed", claims.ID)
	}
	as.code.assertions[claims.ID] = true
	return nil
}
