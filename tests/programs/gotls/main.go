// A Go crypto/tls peer for the NETWORK TLS tests (stdlib only): HTTPS over HTTP/1.1, never h2,
// so that what crypto/tls.(*Conn).Read/Write carry is HTTP/1.x a profile can parse.
//
//	gotls server ADDR CERT KEY   /ok* -> 200 "ok\n", /missing -> 404, /fail -> 500, others 404;
//	                             prints "ready" once it listens, and on SIGTERM
//	                             "totals 200=N 404=N 500=N" (responses it wrote), then exits
//	gotls client URL N [GOFILE]  N sequential GETs on one kept-alive connection, certificate
//	                             not verified; with GOFILE it first waits (20 s at most) for
//	                             that file, so that a profiler can start before the first
//	                             byte; prints "totals CODE=N ..." of the responses it read
//
// The totals are the ground truth a profile's endpoints are compared with.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

type totals struct {
	mu sync.Mutex
	n  map[int]int
}

func (t *totals) add(code int) {
	t.mu.Lock()
	t.n[code]++
	t.mu.Unlock()
}

// line is "totals 200=N 404=N 500=N": the three codes always, others when they occurred.
func (t *totals) line() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[int]bool{200: true, 404: true, 500: true}
	codes := []int{200, 404, 500}
	for c := range t.n {
		if !seen[c] {
			codes = append(codes, c)
		}
	}
	sort.Ints(codes)
	var b strings.Builder
	b.WriteString("totals")
	for _, c := range codes {
		fmt.Fprintf(&b, " %d=%d", c, t.n[c])
	}
	return b.String()
}

func server(addr, cert, key string) error {
	t := &totals{n: map[int]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		code, body := http.StatusNotFound, "missing\n"
		switch {
		case strings.HasPrefix(r.URL.Path, "/ok"):
			code, body = http.StatusOK, "ok\n"
		case r.URL.Path == "/fail":
			code, body = http.StatusInternalServerError, "fail\n"
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(code)
		io.WriteString(w, body)
		t.add(code)
	})
	// An empty TLSNextProto map turns off h2 (ALPN offers http/1.1 only).
	srv := &http.Server{
		Handler:           mux,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: 30 * time.Second,
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		// A handler counts after its write: one that raced the signal is either in
		// the line or was never answered.
		fmt.Println(t.line())
		os.Exit(0)
	}()
	fmt.Println("ready")
	return srv.ServeTLS(ln, cert, key)
}

func client(url string, n int, gofile string) error {
	if gofile != "" {
		for i := 0; i < 400; i++ {
			if _, err := os.Stat(gofile); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t := &totals{n: map[int]int{}}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
	}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var err error
	for i := 0; i < n; i++ {
		var resp *http.Response
		resp, err = c.Get(url)
		if err != nil {
			break
		}
		// Read to the end and close: the connection then goes back for the next GET.
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			break
		}
		t.add(resp.StatusCode)
	}
	fmt.Println(t.line())
	return err
}

func main() {
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "server":
		err = server(os.Args[2], os.Args[3], os.Args[4])
	case (len(os.Args) == 4 || len(os.Args) == 5) && os.Args[1] == "client":
		var n int
		if _, err = fmt.Sscan(os.Args[3], &n); err == nil {
			gofile := ""
			if len(os.Args) == 5 {
				gofile = os.Args[4]
			}
			err = client(os.Args[2], n, gofile)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: gotls server ADDR CERT KEY | gotls client URL N [GOFILE]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotls:", err)
		os.Exit(1)
	}
}
