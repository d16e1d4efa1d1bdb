package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"testing"

	"github.com/andybalholm/brotli"
	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// BenchmarkLiveCompression measures the codings an uncached page could be sent in, on a real
// document: SSR_BENCH_DOC=home.html, e.g. `curl -s localhost:8080/ > home.html` under make run.
func BenchmarkLiveCompression(b *testing.B) {
	path := os.Getenv("SSR_BENCH_DOC")
	if path == "" {
		b.Skip("SSR_BENCH_DOC names a document to compress")
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	run := func(name string, compress func()) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				out.Reset()
				compress()
			}
			b.ReportMetric(float64(out.Len()), "bytes")
		})
	}
	for _, level := range []int{1, 3, 5} {
		w, _ := kgzip.NewWriterLevel(&out, level)
		run(fmt.Sprintf("klauspost-gzip-%d", level), func() { w.Reset(&out); w.Write(doc); w.Close() })
	}
	std, _ := gzip.NewWriterLevel(&out, gzip.DefaultCompression)
	run("stdlib-gzip-6", func() { std.Reset(&out); std.Write(doc); std.Close() })
	for _, q := range []int{1, 2, 4} {
		w := brotli.NewWriterLevel(&out, q)
		run(fmt.Sprintf("brotli-%d", q), func() { w.Reset(&out); w.Write(doc); w.Close() })
	}
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
		run("zstd-"+level.String(), func() { out.Write(enc.EncodeAll(doc, out.AvailableBuffer())) })
	}
}
