package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

// TestReviewsStream: the product page with its reviews, partially prerendered, streams from
// the shop. The product, read from the database by the Go loader, arrives in the stored shell
// while the reviews, a value per request, are held back; they follow in the same response
// once let through, with the value for the browser to hydrate with. The shop's reviews
// service is a gate this test opens (-reviews-url): an order of events, not a race with a
// clock.
func TestReviewsStream(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(gate.Close)
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before gate.Close, which waits for the requests it holds
	renderer, _ := startRenderer(t, dir)
	db := renamedInSQLite(t, dir)
	// Deadlines far beyond a loaded runner's: this test is about the order, not the clock.
	shop := startShop(t, renderer, db, "-render-timeout", "10s", "-stream-timeout", "20s", "-hard-timeout", "30s", "-reviews-url", gate.URL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, shop+"/products/7/reviews", nil)
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("Cache-Status"); resp.StatusCode != 200 || !strings.Contains(got, "detail=resumed") {
		t.Fatalf("got %d, Cache-Status %q: want a prelude stored and resumed", resp.StatusCode, got)
	}
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), `data-testid="reviews-loading"`) {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("the response ended (%v) before the shell's fallback; got:\n%.3000s", err, got.String())
		}
	}
	if shell := got.String(); !strings.Contains(shell, "Renamed in SQLite") || strings.Contains(shell, `data-testid="reviews"`) {
		t.Fatalf("want the shell with the product from the database and no reviews yet, got:\n%.3000s", shell)
	}
	open()
	if _, err := io.Copy(&got, resp.Body); err != nil {
		t.Fatal(err)
	}
	body := got.String()
	if !strings.Contains(body, `data-testid="reviews"`) || !strings.HasSuffix(body, "</html>\n") {
		t.Fatalf("the streamed document is not complete:\n%.3000s", body)
	}
	reviews, _ := json.Marshal(map[string]any{"value": catalog.Reviews(7)})
	if want := `<script type="application/json" data-ssr-deferred="reviews">` + string(reviews) + `</script>`; !strings.Contains(body, want) {
		t.Errorf("the document lacks the deferred reviews for the browser, %s", want)
	}
	m := dataRE.FindStringSubmatch(body)
	var data struct {
		Page  string
		Props productProps
	}
	if m == nil || json.Unmarshal([]byte(m[1]), &data) != nil || data.Page != "product-reviews" || data.Props.Product.ID != 7 || len(data.Props.Related) != 8 {
		t.Errorf("the hydration data lacks the Go loader's props: %+v", data)
	}
}
