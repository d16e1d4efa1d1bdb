package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

var repoRoot = harness.RepoRoot

func TestMain(m *testing.M) {
	if err := harness.Check(harness.NodeBinary, filepath.Join(repoRoot, "app", "dist", "server", "server.js"), filepath.Join(repoRoot, "app", "dist", "client", "manifest.json")); err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// startRenderer runs the real renderer on the demo app's bundle, on a socket in dir, and
// waits until its workers are warm. It is killed when the test ends, or before.
func startRenderer(t *testing.T, dir string, env ...string) (address string, renderer *harness.Process) {
	t.Helper()
	socket := filepath.Join(dir, "renderer.sock")
	return "unix://" + socket, harness.StartRenderer(t, socket, env...)
}

// startShop runs the shop's run() on free ports against renderer, with its database at db,
// and flags added or overriding, and returns its public URL.
func startShop(t *testing.T, renderer, db string, flags ...string) string {
	t.Helper()
	public, _ := startShopAdmin(t, renderer, db, flags...)
	return public
}

// startShopAdmin is startShop that also returns the admin listener's URL.
func startShopAdmin(t *testing.T, renderer, db string, flags ...string) (public, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	var runErr error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		runErr = run(ctx, append([]string{"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-db", db, "-renderer", renderer,
			"-assets", filepath.Join(repoRoot, "app", "dist", "client"),
			// The hard deadline: a slow runner must not turn these tests of data
			// into tests of deadlines.
			"-render-timeout", "2s"}, flags...), func(string) string { return "" }, w)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
		if runErr != nil {
			t.Errorf("shop: %v", runErr)
		}
	})
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line struct{ Msg, Listener, Address string }
		json.Unmarshal(sc.Bytes(), &line)
		if line.Msg == "listening" && line.Listener == "public" {
			public = "http://" + line.Address
		}
		if line.Msg == "listening" && line.Listener == "admin" {
			admin = "http://" + line.Address
		}
		if public != "" && admin != "" {
			go io.Copy(io.Discard, r)
			return public, admin
		}
	}
	<-finished
	t.Fatalf("the shop never listened: %v", runErr)
	return "", ""
}

type page struct {
	status  int
	header  http.Header
	body    string
	props   json.RawMessage
	hasHTML bool
}

var (
	rootRE = regexp.MustCompile(`(?s)<div id="root">(.*?)</div>\n<script id="__SSR_DATA__"`)
	dataRE = regexp.MustCompile(`(?s)<script id="__SSR_DATA__" type="application/json">(.*?)</script>`)
)

func get(t *testing.T, url string) page {
	t.Helper()
	r := harness.Get(t, url)
	p := page{status: r.StatusCode, header: r.Header, body: r.Text}
	if m := rootRE.FindStringSubmatch(p.body); m != nil {
		p.hasHTML = strings.TrimSpace(m[1]) != ""
	}
	if m := dataRE.FindStringSubmatch(p.body); m != nil {
		var data struct{ Props json.RawMessage }
		json.Unmarshal([]byte(m[1]), &data)
		p.props = data.Props
	}
	return p
}

// renamedInSQLite is a database in dir whose product 7 is named "Renamed in SQLite", for a
// test that sees the database's values reach the page.
func renamedInSQLite(t *testing.T, dir string) string {
	t.Helper()
	db := filepath.Join(dir, "shop.db")
	s, err := catalog.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.DB().Exec("UPDATE products SET name = 'Renamed in SQLite' WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPagesRenderWhatTheDatabaseHolds: the shop reads its catalog from SQLite and the
// React pages render it; a row changed in the database shows on the page.
func TestPagesRenderWhatTheDatabaseHolds(t *testing.T) {
	dir := t.TempDir()
	renderer, _ := startRenderer(t, dir)
	db := renamedInSQLite(t, dir)
	shop := startShop(t, renderer, db)

	home := get(t, shop+"/?page=2")
	if home.status != 200 || !home.hasHTML || home.header.Get("X-SSR-Fallback") != "" {
		t.Fatalf("GET /?page=2: %d, fallback %q, server markup %v", home.status, home.header.Get("X-SSR-Fallback"), home.hasHTML)
	}
	var listing catalog.ListingProps
	if err := json.Unmarshal(home.props, &listing); err != nil || listing.Page != 2 || len(listing.Products) != catalog.PageSize || listing.Products[0].ID != 101 {
		t.Errorf("the listing's hydration props: page %d, %d products (%v)", listing.Page, len(listing.Products), err)
	}
	if want := catalog.Generate(150).Name; !strings.Contains(home.body, want) {
		t.Errorf("the listing does not show product 150, %q", want)
	}

	product := get(t, shop+"/products/7")
	if product.status != 200 || !product.hasHTML || !strings.Contains(product.body, "Renamed in SQLite") {
		t.Errorf("GET /products/7: %d, server markup %v; want the name the database holds", product.status, product.hasHTML)
	}
	var detail productProps
	if err := json.Unmarshal(product.props, &detail); err != nil || detail.Product.ID != 7 || len(detail.Related) != 8 {
		t.Errorf("the product's hydration props: %+v (%v)", detail.Product.ID, err)
	}
	if again := get(t, shop+"/products/7"); !strings.HasPrefix(again.header.Get("Cache-Status"), "sidecar-ssr; hit") {
		t.Errorf("GET /products/7 again: Cache-Status %q, want a hit", again.header.Get("Cache-Status"))
	}

	for _, path := range []string{"/products/1001", "/products/007", "/products/abc", "/nowhere"} {
		if nf := get(t, shop+path); nf.status != 404 || !nf.hasHTML || !strings.Contains(strings.ToLower(nf.body), "not found") {
			t.Errorf("GET %s: %d, server markup %v; want the app's not-found page", path, nf.status, nf.hasHTML)
		}
	}
}

// TestRendererDownTheBrowserRendersTheDatabaseProps: with the renderer gone, the shop's
// loader still runs and the document carries its props, so the browser renders the page.
func TestRendererDownTheBrowserRendersTheDatabaseProps(t *testing.T) {
	dir := t.TempDir()
	address, renderer := startRenderer(t, dir)
	shop := startShop(t, address, filepath.Join(dir, "shop.db"))
	renderer.Kill()
	p := get(t, shop+"/products/9")
	if p.status != 200 || p.hasHTML || p.header.Get("X-SSR-Fallback") != "renderer-unavailable" {
		t.Fatalf("GET /products/9 with the renderer down: %d, fallback %q, server markup %v", p.status, p.header.Get("X-SSR-Fallback"), p.hasHTML)
	}
	var detail productProps
	if err := json.Unmarshal(p.props, &detail); err != nil || detail.Product.Name != catalog.Generate(9).Name {
		t.Errorf("the client-side-render document's props: %s (%v), want product 9 from the database", p.props, err)
	}
}

// TestAboutIsTheShopsTemplateWithIslands: /about is the shop's own template, its three
// islands rendered in place with the database's products and the visitor's session, and
// with -fail-island the failing one left to the browser, its props in place.
func TestAboutIsTheShopsTemplateWithIslands(t *testing.T) {
	dir := t.TempDir()
	renderer, _ := startRenderer(t, dir)
	shop := startShop(t, renderer, renamedInSQLite(t, dir), "-fail-island")
	req, _ := http.NewRequest("GET", shop+"/about", nil)
	req.AddCookie(&http.Cookie{Name: "user", Value: "zoe"})
	req.AddCookie(&http.Cookie{Name: "cart", Value: "4"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	doc := string(body)
	if resp.StatusCode != 200 || !strings.Contains(doc, "<title>About The Demo Shop</title>") || resp.Header.Get("Cache-Control") != "private, no-store" {
		t.Fatalf("GET /about: %d, Cache-Control %q:\n%s", resp.StatusCode, resp.Header.Get("Cache-Control"), doc)
	}
	root := func(island string) string {
		_, rest, ok := strings.Cut(doc, `<div data-ssr-island="`+island+`">`)
		if !ok {
			t.Fatalf("no island %s in\n%s", island, doc)
		}
		return rest[:strings.Index(rest, "</div><script")]
	}
	if got := root("FeaturedProducts"); !strings.Contains(got, catalog.Generate(1).Name) {
		t.Errorf("FeaturedProducts holds %q, want the database's first product", got)
	}
	if got := root("CartSummary"); !strings.Contains(got, "zoe") {
		t.Errorf("CartSummary holds %q, want the session's user", got)
	}
	if got := root("Flaky"); got != "" {
		t.Errorf("Flaky holds %q, want it left to the browser", got)
	}
	if !strings.Contains(doc, `<div data-ssr-island="Flaky"></div><script type="application/json" data-ssr-island-props>{"fail":true,"note":"Hand-made in small batches."}</script>`) {
		t.Errorf("Flaky's props are not in place:\n%s", doc)
	}
}

// TestAdminTrustsNoAddress: the shop's purges and profiles answer the admin token's bearers
// alone, loopback callers included (in a pod the loopback is shared with the renderer's app
// code); without a token they are closed. Health and metrics stay open to the kubelet and
// Prometheus.
func TestAdminTrustsNoAddress(t *testing.T) {
	dir := t.TempDir()
	renderer, _ := startRenderer(t, dir)
	db := filepath.Join(dir, "shop.db")
	_, withToken := startShopAdmin(t, renderer, db, "-admin-token", "t0ken")
	_, without := startShopAdmin(t, renderer, db)
	post := func(url, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, c := range []struct {
		name, admin, auth string
		want              int
		says              string
	}{
		{"loopback, no token", withToken, "", http.StatusForbidden, "admin token required"},
		{"loopback, a wrong token", withToken, "Bearer nope", http.StatusForbidden, "admin token required"},
		{"the token", withToken, "Bearer t0ken", http.StatusOK, `"purged"`},
		{"no token configured", without, "", http.StatusForbidden, "no admin token is set"},
	} {
		if code, body := post(c.admin+"/cache/purge?path=/", c.auth); code != c.want || !strings.Contains(body, c.says) {
			t.Errorf("%s: purge answered %d %q, want %d saying %q", c.name, code, body, c.want, c.says)
		}
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if r := harness.Get(t, without+path); r.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a token: %d, want 200", path, r.StatusCode)
		}
	}
}
