package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
	"github.com/sidecar-ssr/sidecar-ssr/shop/internal/testenv"
)

var repoRoot = testenv.RepoRoot

// startRenderer runs the real renderer on the demo app's bundle, on a socket in dir, and
// waits until its workers are warm. Its process is killed when the test ends, or by kill.
func startRenderer(t *testing.T, dir string) (address string, kill func()) {
	t.Helper()
	address = "unix://" + filepath.Join(dir, "renderer.sock")
	cmd := exec.Command(testenv.Node(t), append(testenv.NodeFlags(t), filepath.Join(repoRoot, "renderer", "src", "main.js"))...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "SSR_RENDERER_GRPC_ADDRESS="+address, "SSR_RENDERER_HTTP_LISTEN=127.0.0.1:0", "SSR_RENDERER_THREADS=2")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill = func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }
	t.Cleanup(kill)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"msg":"ready"`) {
				close(ready)
				io.Copy(io.Discard, out)
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("the renderer was not ready within 60s")
	}
	return address, kill
}

// startShop runs the shop's run() on free ports against renderer, with its database at db,
// and returns its public URL.
func startShop(t *testing.T, renderer, db string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	var runErr error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		runErr = run(ctx, []string{"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-db", db, "-renderer", renderer,
			"-assets", filepath.Join(repoRoot, "app", "dist", "client"),
			// The hard deadline: a slow runner must not turn these tests of data
			// into tests of deadlines.
			"-render-timeout", "2s"}, func(string) string { return "" }, w)
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
			go io.Copy(io.Discard, r)
			return "http://" + line.Address
		}
	}
	<-finished
	t.Fatalf("the shop never listened: %v", runErr)
	return ""
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
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := page{status: resp.StatusCode, header: resp.Header, body: string(b)}
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

// TestPagesRenderWhatTheDatabaseHolds: the shop reads its catalog from SQLite and the
// React pages render it; a row changed in the database shows on the page.
func TestPagesRenderWhatTheDatabaseHolds(t *testing.T) {
	dir := t.TempDir()
	renderer, _ := startRenderer(t, dir)
	db := filepath.Join(dir, "shop.db")
	s, err := catalog.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("UPDATE products SET name = 'Renamed in SQLite' WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	s.Close()
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
	renderer, kill := startRenderer(t, dir)
	shop := startShop(t, renderer, filepath.Join(dir, "shop.db"))
	kill()
	p := get(t, shop+"/products/9")
	if p.status != 200 || p.hasHTML || p.header.Get("X-SSR-Fallback") != "renderer-unavailable" {
		t.Fatalf("GET /products/9 with the renderer down: %d, fallback %q, server markup %v", p.status, p.header.Get("X-SSR-Fallback"), p.hasHTML)
	}
	var detail productProps
	if err := json.Unmarshal(p.props, &detail); err != nil || detail.Product.Name != catalog.Generate(9).Name {
		t.Errorf("the client-side-render document's props: %s (%v), want product 9 from the database", p.props, err)
	}
}
