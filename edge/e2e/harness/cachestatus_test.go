package harness

import "testing"

func TestCheckCacheStatus(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values []string
		ok     bool
	}{
		{"none", nil, true},
		{"a hit", []string{"sidecar-ssr; hit; ttl=41"}, true},
		{"a collapsed miss, stored", []string{"sidecar-ssr; fwd=miss; collapsed; fwd-status=200; stored"}, true},
		{"a streamed bypass", []string{"sidecar-ssr; fwd=bypass; fwd-status=200; detail=streamed"}, true},
		{"two members", []string{"nginx; hit, sidecar-ssr; fwd=miss; detail=timeout"}, true},
		{"detail twice", []string{"sidecar-ssr; fwd=bypass; detail=uncacheable-route; fwd-status=200; detail=streamed"}, false},
		{"not a structured field", []string{"sidecar-ssr; fwd=\"unterminated"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckCacheStatus(tt.values); (err == nil) != tt.ok {
				t.Errorf("CheckCacheStatus(%q) = %v, want ok %v", tt.values, err, tt.ok)
			}
		})
	}
}
