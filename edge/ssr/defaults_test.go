package ssr_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// TestDefaultsAreTheBinarys: the edge binary's embedded defaults (defaults.yaml, which the
// renderer's tests read too) give the options zero Options mean, but where the binary
// decides otherwise, for the reason given: each default lives in the package, and the file
// that writes it out for operators is held to it.
func TestDefaultsAreTheBinarys(t *testing.T) {
	cfg, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	differs := map[string]string{
		"EarlyHints": "on in the binary: behind a proxy of its own deploy; off in the package, where httptest and middleware take a 103 for the status",
	}
	compare := func(what string, fromFile, zero any) {
		t.Helper()
		a, b := reflect.ValueOf(fromFile), reflect.ValueOf(zero)
		for i := range a.NumField() {
			name := a.Type().Field(i).Name
			if _, ok := differs[name]; ok {
				continue
			}
			if f, z := a.Field(i).Interface(), b.Field(i).Interface(); !reflect.DeepEqual(f, z) {
				t.Errorf("%s.%s: the binary's default is %v, the package's %v", what, name, f, z)
			}
		}
	}
	file, zero := ssr.WithDefaults(cfg.Options()), ssr.WithDefaults(ssr.Options{})
	compare("Options", file, zero)
	compare("Options.Timeouts", file.Timeouts, zero.Timeouts)

	public := cfg.PublicServer()
	serve := ssr.ServeWithDefaults(cfg.ServeOptions(), public)
	zeroPublic := &http.Server{}
	zeroServe := ssr.ServeWithDefaults(ssr.ServeOptions{}, zeroPublic)
	compare("ServeOptions", serve, zeroServe)
	for _, f := range []string{"Addr", "ReadHeaderTimeout", "IdleTimeout", "MaxHeaderBytes"} {
		if a, b := reflect.ValueOf(public).Elem().FieldByName(f).Interface(), reflect.ValueOf(zeroPublic).Elem().FieldByName(f).Interface(); a != b {
			t.Errorf("http.Server.%s: the binary's default is %v, the package's %v", f, a, b)
		}
	}
	// The binary's server serves only the package's pages and assets, and bounds them all; the
	// package leaves the shop's server its own, and bounds its pages' writing alone, by the
	// binary's write_timeout.
	if zeroPublic.ReadTimeout != 0 || zeroPublic.WriteTimeout != 0 {
		t.Errorf("ListenAndServe set the shop's ReadTimeout %s and WriteTimeout %s: both cut long requests and responses", zeroPublic.ReadTimeout, zeroPublic.WriteTimeout)
	}
	if public.WriteTimeout != server.PageWriteTimeout {
		t.Errorf("the binary's write_timeout is %s, the package's pages' bound %s", public.WriteTimeout, server.PageWriteTimeout)
	}
}
