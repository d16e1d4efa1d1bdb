package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

// The product page with its reviews is partially prerendered (main.go): its shell, the
// product from SQLite, is stored once; each visitor's cart line and the reviews are resumed
// for that visitor's request alone, after the stored shell, in the same response.

// visit GETs url as a visitor with cookies and reads the whole body.
func visit(t *testing.T, url string, cookies ...*http.Cookie) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	r := harness.Do(t, req)
	return r.Response, r.Text
}

// prelude is the part of a resumed document before its first resumed hole: the stored
// document, as every visitor gets it.
func prelude(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `<div hidden id="S:`)
	if i < 0 {
		t.Fatalf("no resumed hole in the document:\n%.3000s", body)
	}
	return body[:i]
}

// TestVisitorsShareTheShellNotTheirCarts: two visitors with different carts, asking at the
// same time, get the same stored prelude (bytes compared) and each their own cart line; the
// prelude holds the line's fallback and no visitor's data, and no response holds the other
// visitor's.
func TestVisitorsShareTheShellNotTheirCarts(t *testing.T) {
	dir := t.TempDir()
	renderer, _ := startRenderer(t, dir)
	shop := startShop(t, renderer, filepath.Join(dir, "shop.db"), "-reviews-delay", "0", "-render-timeout", "10s", "-stream-timeout", "20s", "-hard-timeout", "30s")
	url := shop + "/products/5/reviews"
	visitors := []struct {
		user, cart, line string
	}{
		{"ann-7f3a", "2", "ann-7f3a, 2 of these are in your cart"},
		{"bob-91c2", "", "Not in your cart yet, bob-91c2"},
	}
	var shell string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for round := range 10 {
		for i, v := range visitors {
			wg.Go(func() {
				cookies := []*http.Cookie{{Name: "user", Value: v.user}}
				if v.cart != "" {
					cookies = append(cookies, &http.Cookie{Name: "cart_5", Value: v.cart})
				}
				resp, body := visit(t, url, cookies...)
				if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=resumed") {
					t.Errorf("round %d, %s: %d, Cache-Status %q; want a resumed prelude", round, v.user, resp.StatusCode, resp.Header.Get("Cache-Status"))
					return
				}
				if !strings.Contains(body, `data-testid="cart-line">`+v.line+`</p>`) || !strings.HasSuffix(body, "</html>\n") {
					t.Errorf("round %d, %s: want the line %q in a whole document, got:\n%.4000s", round, v.user, v.line, body)
				}
				other := visitors[1-i].user
				if strings.Contains(body, other) {
					t.Errorf("round %d: %s's response holds %s's data", round, v.user, other)
				}
				got := prelude(t, body)
				if strings.Contains(got, v.user) || !strings.Contains(got, `data-testid="cart-line-loading"`) || !strings.Contains(got, "<!--$?-->") {
					t.Errorf("round %d, %s: the prelude holds the visitor's data, or not the line's fallback:\n%s", round, v.user, got)
				}
				mu.Lock()
				defer mu.Unlock()
				if shell == "" {
					shell = got
				} else if got != shell {
					t.Errorf("round %d, %s: another prelude than the first visitor's:\n%s\nwant:\n%s", round, v.user, got, shell)
				}
			})
		}
		wg.Wait() // the first round stores the shell; the others are hits
	}
}

// TestRendererLostAfterThePrelude: the renderer is killed while a resume waits for the
// reviews; the response, its prelude already sent, still ends as a well-formed 200 document,
// its pending holes left to the browser, and the trailers say it was partial.
func TestRendererLostAfterThePrelude(t *testing.T) {
	dir := t.TempDir()
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(gate.Close)
	renderer, proc := startRenderer(t, dir)
	shop := startShop(t, renderer, filepath.Join(dir, "shop.db"), "-render-timeout", "10s", "-stream-timeout", "20s", "-hard-timeout", "30s", "-reviews-url", gate.URL)
	req, _ := http.NewRequest(http.MethodGet, shop+"/products/8/reviews", nil)
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=resumed") {
		t.Fatalf("got %d, Cache-Status %q: want a resumed prelude", resp.StatusCode, resp.Header.Get("Cache-Status"))
	}
	in := bufio.NewReader(resp.Body)
	var got strings.Builder
	for !strings.Contains(got.String(), `data-testid="reviews-loading"`) {
		line, err := in.ReadString('>')
		got.WriteString(line)
		if err != nil {
			t.Fatalf("the response ended (%v) before the prelude's reviews fallback:\n%.3000s", err, got.String())
		}
	}
	proc.Signal(syscall.SIGKILL)
	rest, err := io.ReadAll(in)
	if err != nil {
		t.Fatal(err)
	}
	body := got.String() + string(rest)
	if !strings.HasSuffix(body, "</html>\n") || !strings.Contains(body, `c.data="$!"`) || strings.Contains(body, `data-testid="reviews"`) {
		t.Fatalf("want the document closed with its holes left to the browser, got:\n%.5000s", body)
	}
	if !strings.Contains(body, `data-ssr-deferred="reviews">{"error":`) {
		t.Errorf("the reviews, never in, are not marked as missing for the browser")
	}
	if got := resp.Trailer.Get("X-SSR-Fallback"); got != "partial" {
		t.Errorf("trailer X-SSR-Fallback %q, want partial", got)
	}
}

// TestPurgeRemakesTheShellOnce: a purge by the product's tag removes the stored shell and its
// state together; a herd of 50 requests then shares one prerender (one request went
// forward, the others joined it or hit what it stored), and every one gets the product as
// the database now holds it.
func TestPurgeRemakesTheShellOnce(t *testing.T) {
	dir := t.TempDir()
	renderer, _ := startRenderer(t, dir)
	db := filepath.Join(dir, "shop.db")
	shop, admin := startShopAdmin(t, renderer, db, "-admin-token", "t0ken", "-reviews-delay", "0", "-render-timeout", "10s", "-stream-timeout", "20s", "-hard-timeout", "30s")
	url := shop + "/products/9/reviews"
	if resp, body := visit(t, url); resp.StatusCode != 200 || strings.Contains(body, "Renamed after the shell") {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	if resp, _ := visit(t, url); !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Fatalf("second request: Cache-Status %q, want a hit", resp.Header.Get("Cache-Status"))
	}
	s, err := catalog.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("UPDATE products SET name = 'Renamed after the shell' WHERE id = 9"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	req, _ := http.NewRequest(http.MethodPost, admin+"/cache/purge?tag=product:9", nil)
	req.Header.Set("Authorization", "Bearer t0ken")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("purge: %v %v", resp, err)
	}
	statuses := make([]string, 50)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			resp, body := visit(t, url)
			statuses[i] = resp.Header.Get("Cache-Status")
			if resp.StatusCode != 200 || !strings.Contains(statuses[i], "detail=resumed") || !strings.Contains(prelude(t, body), "Renamed after the shell") {
				t.Errorf("request %d: %d, Cache-Status %q: want the new shell, resumed", i, resp.StatusCode, statuses[i])
			}
		})
	}
	wg.Wait()
	forward := 0
	for _, s := range statuses {
		if strings.Contains(s, "fwd=miss") && !strings.Contains(s, "collapsed") {
			forward++
		}
	}
	if forward != 1 {
		t.Errorf("%d of 50 requests rendered the shell, want 1: %s", forward, fmt.Sprint(statuses))
	}
}
