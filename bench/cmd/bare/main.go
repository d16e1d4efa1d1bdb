// Command bare is the yardstick for cache hits: a plain net/http handler that writes the
// very bytes the edge sends for one URL (fetched once at start, with the same
// Accept-Encoding a load tool sends), and nothing else.
//
//	bare -from http://127.0.0.1:18080/ -accept-encoding gzip -addr 127.0.0.1:18081
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
)

func main() {
	from := flag.String("from", "", "URL whose response to replay")
	acceptEncoding := flag.String("accept-encoding", "gzip", "Accept-Encoding to fetch it with")
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	flag.Parse()

	req, err := http.NewRequest("GET", *from, nil)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", *acceptEncoding)
	resp, err := http.DefaultTransport.RoundTrip(req) // keeps the encoded body as sent
	if err != nil {
		log.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	contentType, contentEncoding := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding")
	fmt.Fprintf(os.Stderr, "bare: replaying %d bytes (%s, %q) on %s\n", len(body), contentType, contentEncoding, *addr)

	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		if contentEncoding != "" {
			h.Set("Content-Encoding", contentEncoding)
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})))
}
