package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Stored documents are compressed once, when stored, and served in the coding the client
// prefers: brotli, then gzip, then identity.
var storedCodings = []string{"br", "gzip"}

// liveCodings are those of a document compressed as it is sent (rendered for one request,
// or the client-side-render shell), cheapest per byte saved first. Measured on the demo's
// 181 KB home page (BenchmarkLiveCompression): zstd at its default level 0.39 ms → 15.0 KB,
// brotli quality 1 0.65 ms → 16.6 KB, gzip (klauspost) level 1 0.34 ms → 18.8 KB; brotli 4
// took 3.4 ms and the standard library's gzip 6 2.3 ms for 14.2 and 15.4 KB.
var liveCodings = []string{"zstd", "br", "gzip"}

// A response compressed as it is written holds its encoder until its client has read it
// all (up to edge.write_timeout), so the encoders keep small windows. Measured on a 7 MB
// product listing: brotli quality 1 held 9.9 MB with the default 4 MiB window, 0.5 MB with
// 256 KiB and its input gathered in 32 KiB (respond.go); 64 KiB cost 1.6 times the CPU of a
// hit (BenchmarkServeHit). A streaming zstd encoder held 8.8 MB with the default 8 MiB
// window, 0.7 MB with 128 KiB and WithLowerEncoderMem, for no more bytes.
var (
	// zstdEncoder's EncodeAll is safe for concurrent use.
	zstdEncoder, _ = zstd.NewWriter(nil)
	brotliWriters  = sync.Pool{New: func() any {
		return brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: 1, LGWin: 18})
	}}
	gzipWriters = sync.Pool{New: func() any { w, _ := kgzip.NewWriterLevel(nil, kgzip.BestSpeed); return w }}
	// zstdWriters are streaming encoders, unlike zstdEncoder's EncodeAll; one goroutine each,
	// since a response's writes are small.
	zstdWriters = sync.Pool{New: func() any {
		w, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithWindowSize(128<<10), zstd.WithLowerEncoderMem(true))
		return w
	}}
)

// streamEncoder compresses a response as it is written.
type streamEncoder interface {
	io.Writer
	Flush() error
	Close() error
}

// newStreamEncoder returns a pooled encoder in coding, one of liveCodings, that writes to
// w, the response to r, and the function that gives it back once the response no longer
// writes; or, when none is left for r's client (encoders.go), ok false: the response goes
// out uncompressed. What an encoder holds does not grow with the response, 0.7 to 1 MB
// (TestNonceHitHoldsNoCopyOfThePage), but a response holds it for as long as its client
// takes to read, up to edge.write_timeout: clients that stop reading must not add up to
// encoders without bound.
func newStreamEncoder(r *http.Request, w io.Writer, coding string) (enc streamEncoder, release func(), ok bool) {
	free, refused := encoders.take(r)
	if refused != "" {
		return nil, nil, false
	}
	switch coding {
	case "zstd":
		z := zstdWriters.Get().(*zstd.Encoder)
		z.Reset(w)
		return z, func() { zstdWriters.Put(z); free() }, true
	case "br":
		b := brotliWriters.Get().(*brotli.Writer)
		b.Reset(w)
		return b, func() { brotliWriters.Put(b); free() }, true
	default:
		g := gzipWriters.Get().(*kgzip.Writer)
		g.Reset(w)
		return g, func() { gzipWriters.Put(g); free() }, true
	}
}

// compressLive appends body, compressed in one of liveCodings, to dst.
func compressLive(dst []byte, coding string, body []byte) []byte {
	switch coding {
	case "zstd":
		return zstdEncoder.EncodeAll(body, dst)
	case "br":
		return compressWith[*brotli.Writer](&brotliWriters, dst, body)
	default:
		return compressWith[*kgzip.Writer](&gzipWriters, dst, body)
	}
}

// compressWith appends body to dst through a writer from pool.
func compressWith[W interface {
	io.WriteCloser
	Reset(io.Writer)
}](pool *sync.Pool, dst, body []byte) []byte {
	buf := bytes.NewBuffer(dst)
	w := pool.Get().(W)
	w.Reset(buf)
	w.Write(body)
	w.Close()
	pool.Put(w)
	return buf.Bytes()
}

// minCompressBytes: below this, compression saves less than its headers cost.
const minCompressBytes = 1024

// encodeAll returns doc in every coding worth storing, identity included, each in a slice
// of its own that holds no spare capacity (the cache counts what the slices hold).
func encodeAll(doc []byte) map[string][]byte {
	bodies := map[string][]byte{"": bytes.Clone(doc)}
	if len(doc) < minCompressBytes {
		return bodies
	}
	var br bytes.Buffer
	// Quality 5: most of brotli's gain at a few ms for a 200 KB page; it is paid once per store.
	bw := brotli.NewWriterLevel(&br, 5)
	bw.Write(doc)
	bw.Close()
	bodies["br"] = bytes.Clone(br.Bytes())
	var gz bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	gw.Write(doc)
	gw.Close()
	bodies["gzip"] = bytes.Clone(gz.Bytes())
	return bodies
}

// negotiate picks the first of offered that Accept-Encoding allows (q > 0); "" means
// identity.
func negotiate(acceptEncoding string, offered []string) string {
	if acceptEncoding == "" {
		return ""
	}
	accepted := map[string]bool{}
	star := false
	for part := range strings.SplitSeq(acceptEncoding, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		ok := true
		if _, q, found := strings.Cut(params, "q="); found {
			v, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
			ok = err == nil && v > 0
		}
		if name == "*" {
			star = ok
		} else {
			accepted[name] = ok
		}
	}
	for _, c := range offered {
		if ok, listed := accepted[c]; ok || (!listed && star) {
			return c
		}
	}
	return ""
}
