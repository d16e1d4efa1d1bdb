// Command v8go-ssr is the "in-process V8 in Go" contender of `make bench`: the architecture
// sidecar-ssr's motivating users ran. A pool of V8 isolates (github.com/tommie/v8go) renders
// the demo app's server bundle inside a Go net/http server, tuned the way its users would
// tune it: one isolate per core, the bundle compiled once into a long-lived context per
// isolate, that context reused for every request, and every per-request V8 handle released.
//
// Per request, like the Node contenders, it runs the home page's load() (the demo's is pure
// and synchronous, but it is not hoisted out of the request), renders head() with
// renderToStaticMarkup and the page with renderToString, and writes the document with the
// edge's own writer (edge/internal/document): the same bytes the edge serves.
//
// The bundle is app/dist/v8/server.js (`node app/build.mjs --v8`): the app's server exports as
// a classic script that assigns them to globalThis.SSR.
//
//	v8go-ssr [-bundle app/dist/v8/server.js] [-addr 127.0.0.1:18082] [-isolates NumCPU] [-assets dir]
//
// With -db, it does the data work an in-process shop would: GET / reads its listing from the
// shop's SQLite database in Go (shop/catalog) and passes the props into the isolate, as the
// Go shop hands them to the renderer.
//
// GET / renders the home page (?page=N is passed to load as the query); GET /healthz is 200.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	v8 "github.com/tommie/v8go"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

// glue runs once per context after the bundle: one function per request, so a render costs
// one call across cgo plus reading three strings back. It returns { head, html, props } (props
// as JSON), or a promise of it when a page's load() is async.
const glue = `
globalThis.__render = function (name, url, queryJSON, propsJSON) {
  const page = SSR.pages[name];
  const ctx = { url, params: {}, query: JSON.parse(queryJSON), variants: {}, props: JSON.parse(propsJSON) };
  const finish = (result) => {
    const props = (result && result.props) || {};
    return {
      head: page.head ? SSR.renderToStaticMarkup(page.head(props, ctx)) : '',
      html: SSR.renderToString(SSR.createElement(page.component, props)),
      props: JSON.stringify(props),
    };
  };
  const result = page.load ? page.load(ctx) : { props: {} };
  return result && typeof result.then === 'function' ? result.then(finish) : finish(result);
};
`

// renderer is one isolate with its long-lived context. Only one goroutine uses it at a time
// (the pool hands it out), as V8 requires.
type renderer struct {
	iso    *v8.Isolate
	ctx    *v8.Context
	render *v8.Function
}

func newRenderer(bundle *v8.UnboundScript, iso *v8.Isolate) (*renderer, error) {
	ctx := v8.NewContext(iso)
	if _, err := bundle.Run(ctx); err != nil {
		return nil, fmt.Errorf("running the bundle: %w", err)
	}
	if _, err := ctx.RunScript(glue, "glue.js"); err != nil {
		return nil, fmt.Errorf("glue: %w", err)
	}
	fn, err := ctx.Global().Get("__render")
	if err != nil {
		return nil, err
	}
	render, err := fn.AsFunction()
	if err != nil {
		return nil, err
	}
	return &renderer{iso: iso, ctx: ctx, render: render}, nil
}

type page struct {
	Head, HTML, PropsJSON string
}

// Render runs load, head and renderToString for one request. Every handle it creates is
// released before it returns, so the long-lived context does not accumulate values.
func (r *renderer) Render(name, url, queryJSON, propsJSON string) (page, error) {
	var args [4]*v8.Value
	for i, s := range []string{name, url, queryJSON, propsJSON} {
		v, err := v8.NewValue(r.iso, s)
		if err != nil {
			return page{}, err
		}
		defer v.Release()
		args[i] = v
	}
	res, err := r.render.Call(v8.Undefined(r.iso), args[0], args[1], args[2], args[3])
	if err != nil {
		return page{}, err
	}
	defer res.Release()
	if res.IsPromise() { // an async load(): settle it (no I/O here, microtasks suffice)
		p, _ := res.AsPromise()
		r.ctx.PerformMicrotaskCheckpoint()
		if p.State() != v8.Fulfilled {
			return page{}, fmt.Errorf("load() did not fulfil: %s", p.Result().DetailString())
		}
		res = p.Result()
		defer res.Release()
	}
	obj, err := res.AsObject()
	if err != nil {
		return page{}, err
	}
	var out [3]string
	for i, key := range []string{"head", "html", "props"} {
		v, err := obj.Get(key)
		if err != nil {
			return page{}, err
		}
		out[i] = v.String()
		v.Release()
	}
	return page{Head: out[0], HTML: out[1], PropsJSON: out[2]}, nil
}

// shell is the edge's own document writer, so both serve the same bytes for a page.
func shell(assetsDir string) (*document.Shell, error) {
	if assetsDir == "" {
		return document.NewShell(&document.Manifest{}), nil
	}
	m, err := document.LoadManifest(assetsDir)
	if err != nil {
		return nil, err
	}
	return document.NewShell(m), nil
}

func main() {
	bundlePath := flag.String("bundle", "app/dist/v8/server.js", "server bundle built by `node app/build.mjs --v8`")
	addr := flag.String("addr", "127.0.0.1:18082", "listen address")
	isolates := flag.Int("isolates", runtime.NumCPU(), "isolates in the pool (renders in parallel)")
	assetsDir := flag.String("assets", "", "client build folder whose manifest.json names the asset tags (empty: none)")
	warmup := flag.Int("warmup", 20, "renders of / per isolate before listening (JIT warm-up)")
	dbPath := flag.String("db", "", "the shop's SQLite database: read the listing's props from it in Go (empty: the page's load() computes them)")
	flag.Parse()
	log.SetFlags(0)

	source, err := os.ReadFile(*bundlePath)
	if err != nil {
		log.Fatalf("bundle: %v (build it: node app/build.mjs --v8)", err)
	}
	doc, err := shell(*assetsDir)
	if err != nil {
		log.Fatalf("assets: %v", err)
	}

	var db *catalog.Store
	if *dbPath != "" {
		if db, err = catalog.Open(context.Background(), *dbPath); err != nil {
			log.Fatalf("database: %v", err)
		}
	}
	// listingProps are the props of the listing page for the ?page= query: "{}" without a
	// database (the page's load() computes them).
	listingProps := func(ctx context.Context, query string) (string, error) {
		if db == nil {
			return "{}", nil
		}
		page := catalog.ListingPage(query)
		products, err := db.Listing(ctx, page)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(catalog.ListingProps{Page: page, PageCount: catalog.PageCount, Products: products})
		return string(b), err
	}
	warmupProps, err := listingProps(context.Background(), "")
	if err != nil {
		log.Fatalf("database: %v", err)
	}

	started := time.Now()
	pool := make(chan *renderer, *isolates)
	for i := 0; i < *isolates; i++ {
		iso := v8.NewIsolate()
		// Compiled once per isolate (compiled code belongs to its isolate); run into the
		// context that serves every request.
		script, err := iso.CompileUnboundScript(string(source), *bundlePath, v8.CompileOptions{})
		if err != nil {
			log.Fatalf("compiling %s: %v", *bundlePath, err)
		}
		r, err := newRenderer(script, iso)
		if err != nil {
			log.Fatalf("isolate %d: %v", i, err)
		}
		for j := 0; j < *warmup; j++ {
			if _, err := r.Render("home", "/", "{}", warmupProps); err != nil {
				log.Fatalf("warm-up render: %v", err)
			}
		}
		pool <- r
	}

	bufs := sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		query := map[string]string{}
		for k, v := range req.URL.Query() {
			query[k] = v[0]
		}
		queryJSON, _ := json.Marshal(query)
		url := req.URL.RequestURI()

		props, err := listingProps(req.Context(), req.URL.Query().Get("page"))
		if err != nil {
			log.Printf("database: %v", err)
			http.Error(w, "database failed", http.StatusInternalServerError)
			return
		}
		r := <-pool
		p, err := r.Render("home", url, string(queryJSON), props)
		pool <- r
		if err != nil {
			var jsErr *v8.JSError
			if errors.As(err, &jsErr) {
				err = fmt.Errorf("%s", jsErr.StackTrace)
			}
			log.Printf("render %s: %v", url, err)
			http.Error(w, "render failed", http.StatusInternalServerError)
			return
		}
		bp := bufs.Get().(*[]byte)
		out := doc.Append((*bp)[:0], document.Page{Name: "home", URL: url, Head: p.Head, HTML: []byte(p.HTML), PropsJSON: []byte(p.PropsJSON)})
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(out)))
		w.Write(out)
		*bp = out
		bufs.Put(bp)
	})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf(`{"msg":"listening","address":"http://%s","isolates":%d,"v8":"%s","ready_ms":%d}`,
		ln.Addr(), *isolates, v8.Version(), time.Since(started).Milliseconds())
	log.Fatal(http.Serve(ln, mux))
}
