package server

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
)

// Stored documents are compressed once, when stored, and served in the coding the client
// prefers: brotli, then gzip, then identity.
var codings = []string{"br", "gzip"}

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

// negotiate picks the first of codings that Accept-Encoding allows (q > 0) and bodies has;
// "" means identity.
func negotiate(acceptEncoding string, bodies map[string][]byte) string {
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
	for _, c := range codings {
		if _, have := bodies[c]; !have {
			continue
		}
		if ok, listed := accepted[c]; ok || (!listed && star) {
			return c
		}
	}
	return ""
}
