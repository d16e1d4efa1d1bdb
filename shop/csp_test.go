package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWithCSP(t *testing.T) {
	var seen []string
	h := withCSP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, nonceFrom(r.Context()))
	}))
	var policies []string
	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		policies = append(policies, rec.Header().Get("Content-Security-Policy"))
	}
	for i, nonce := range seen {
		if len(nonce) < 16 || !strings.Contains(policies[i], "script-src 'nonce-"+nonce+"'") {
			t.Errorf("response %d: got nonce %q and policy %q, want the policy to allow that nonce's scripts only", i, nonce, policies[i])
		}
	}
	if seen[0] == seen[1] {
		t.Errorf("got nonce %q twice: each response needs its own", seen[0])
	}
}
