package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// twoEdges starts a renderer and two edges sharing the store at address.
func twoEdges(t *testing.T, address string) []*edgeProcess {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket)
	env := "SSR_EDGE_SHARED_CACHE_ADDRESS=" + address
	return []*edgeProcess{startEdge(t, socket, env), startEdge(t, socket, env)}
}

// storeClient is a client of the store of its own, with time to wait on a busy store.
func storeClient(t *testing.T, address string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(address)
	if err != nil {
		t.Fatal(err)
	}
	o.ReadTimeout, o.WriteTimeout = 10*time.Second, 10*time.Second
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// waitStored waits until edge serves path from its cache and the store holds it.
func waitStored(t *testing.T, edge *edgeProcess, client *redis.Client, path string) {
	t.Helper()
	poll.Until(t, "storing "+path, func() bool {
		return strings.HasPrefix(cacheStatus(harness.Get(t, edge.url+path)), "sidecar-ssr; hit") && len(storedDocs(t, client, path)) == 1
	})
}

// storedDocs returns the keys of the store's documents of path (their cache keys hold it).
func storedDocs(t *testing.T, c *redis.Client, path string) []string {
	t.Helper()
	keys, err := c.Keys(context.Background(), "ssr:doc:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, k := range keys {
		if strings.HasSuffix(k, " "+path) {
			docs = append(docs, strings.TrimPrefix(k, "ssr:doc:"))
		}
	}
	return docs
}

// age is a response's Age in seconds.
func age(r harness.Response) int {
	n, _ := strconv.Atoi(r.Header.Get("Age"))
	return n
}

// TestSharedPurgeWhileTheStoreSleeps: a purge on an edge whose store does not answer (busy
// in DEBUG SLEEP, the edge's circuit open) answers that the store was not purged; neither
// edge ever serves the purged copy from the store after it, and once the store answers
// again the purge is applied there.
func TestSharedPurgeWhileTheStoreSleeps(t *testing.T) {
	address := redistest.Start(t)
	edges := twoEdges(t, address)
	client := storeClient(t, address)
	const path = "/cached/products/7"
	waitStored(t, edges[0], client, path)
	// A copy stored before the purge is older than 30 s on either edge's clock from now on;
	// a render after it is younger (the test takes seconds).
	for _, e := range edges {
		e.advance(t, 30*time.Second)
	}
	renderedAfter := time.Now().Add(20 * time.Second)

	redistest.Busy(t, address, 3*time.Second)
	for i, e := range edges { // three calls that time out open each edge's circuit
		for j := range 3 {
			harness.Get(t, e.url+"/cached/products/"+strconv.Itoa(100*(i+1)+j))
		}
	}
	status, body := purge(t, edges[0], "path="+path)
	if status == http.StatusOK || !strings.Contains(body, `"store":false`) {
		t.Errorf("a purge while the store sleeps: got %d %s, want an error saying the store was not purged", status, body)
	}

	// The store wakes: for 3 s, neither edge serves the old copy from it.
	poll.Until(t, "the store answering again", func() bool { return client.Ping(context.Background()).Err() == nil })
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
		for i, e := range edges {
			r := harness.Get(t, e.url+path)
			if strings.Contains(cacheStatus(r), "detail=shared") && age(r) >= 30 {
				t.Fatalf("edge %d served the purged copy from the store (Cache-Status %q, Age %d)", i, cacheStatus(r), age(r))
			}
		}
	}
	store, err := sharedcache.New(sharedcache.Options{Address: address, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, key := range storedDocs(t, client, path) {
		if e, err := store.Get(context.Background(), key); err != nil || e != nil && e.Stored.Before(renderedAfter) {
			t.Errorf("the store still holds the purged copy (stored %s, %v)", e.Stored, err)
		}
	}
}

// TestSharedPurgeReachesReplicasWhenDeletesFail: a purge whose deletes in the store fail
// (a corrupt index) still reaches the other edge at once, and neither edge takes the
// store's copy while the store has not confirmed the purge.
func TestSharedPurgeReachesReplicasWhenDeletesFail(t *testing.T) {
	address := redistest.Start(t)
	edges := twoEdges(t, address)
	client := storeClient(t, address)
	const path = "/cached/products/8"
	waitStored(t, edges[0], client, path)
	poll.Until(t, "edge 1 serving "+path, func() bool {
		return strings.HasPrefix(cacheStatus(harness.Get(t, edges[1].url+path)), "sidecar-ssr; hit")
	})
	ctx := context.Background()
	for _, index := range []string{"ssr:path:" + path, "ssr:ix:path:" + path} { // this version's index, and the one before
		client.Del(ctx, index)
		client.Set(ctx, index, "not an index", time.Minute)
	}
	status, body := purge(t, edges[0], "path="+path)
	if status == http.StatusOK || !strings.Contains(body, `"store":false`) {
		t.Errorf("a purge whose deletes failed: got %d %s, want an error saying the store was not purged", status, body)
	}
	// Pub/sub takes milliseconds; poll.Within only bounds a failing wait on a loaded machine.
	poll.Until(t, "edge 1 missing after edge 0's purge, whose deletes failed", func() bool {
		return strings.Contains(cacheStatus(harness.Get(t, edges[1].url+path)), "fwd=miss")
	})
	// Time is the behaviour here: for about a second while the purge stays unconfirmed,
	// neither edge takes the store's copy.
	for range 10 {
		for i, e := range edges {
			if r := harness.Get(t, e.url+path); strings.Contains(cacheStatus(r), "detail=shared") {
				t.Errorf("edge %d took the store's copy while the purge was not applied there: %q", i, cacheStatus(r))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestManyPurgesAcrossReplicasDuringARender: a hundred purges of other pages, made on the
// other edge while a render runs on this one (each reaches this edge's cache through the
// store), neither keep that render from being stored nor the next request from its hit.
// (The cache kept the last 64 purges: the 65th stopped caching of every render older.)
func TestManyPurgesAcrossReplicasDuringARender(t *testing.T) {
	address := redistest.Start(t)
	edges := twoEdges(t, address)
	client := storeClient(t, address)
	// The page's load() awaits this backend until the purges are done.
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-release
		io.WriteString(w, "late")
	}))
	t.Cleanup(backend.Close)
	t.Cleanup(func() { closeOnce(release) })
	path := "/cached/backend?port=" + backend.URL[strings.LastIndex(backend.URL, ":")+1:]
	go func() { // falls back at its render timeout; the render goes on
		if resp, err := http.Get(edges[0].url + path); err == nil {
			resp.Body.Close()
		}
	}()
	<-asked
	for i := range 100 {
		if code, body := purge(t, edges[1], "path=/cached/products/"+strconv.Itoa(i)); code != 200 {
			t.Fatalf("purge %d: got %d %s", i, code, body)
		}
	}
	closeOnce(release)
	poll.Until(t, "the render stored here and in the store", func() bool {
		return strings.HasPrefix(cacheStatus(harness.Get(t, edges[0].url+path)), "sidecar-ssr; hit") &&
			len(storedDocs(t, client, path)) == 1
	})
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}
