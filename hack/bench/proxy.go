package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// startDelayProxy listens on 127.0.0.1 and forwards every connection to
// target, holding each chunk read in either direction for delay before it
// is written on: a link with that latency each way and no bandwidth limit,
// so every request costs a round trip of 2×delay, as on a cluster that far
// away. TLS passes through untouched (the API server's certificate names
// 127.0.0.1, whatever the port).
func startDelayProxy(ctx context.Context, target string, delay time.Duration) (addr string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				out, err := net.Dial("tcp", target)
				if err != nil {
					in.Close()
					return
				}
				done := make(chan struct{}, 2)
				go func() { delayedCopy(out, in, delay); done <- struct{}{} }()
				go func() { delayedCopy(in, out, delay); done <- struct{}{} }()
				<-done
				<-done
				in.Close()
				out.Close()
			}()
		}
	}()
	return ln.Addr().String(), nil
}

// delayedCopy writes what it reads from src to dst, each chunk delay after
// it was read; chunks read meanwhile queue up behind it (latency, not a
// slower link).
func delayedCopy(dst, src net.Conn, delay time.Duration) {
	type chunk struct {
		due time.Time
		b   []byte
	}
	chunks := make(chan chunk, 4096)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{time.Now().Add(delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	for range chunks { // let the reader end
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// apiServerAddress is the host:port of the one cluster kubeconfig names.
func apiServerAddress(kubeconfig string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	if len(cfg.Clusters) != 1 {
		return "", fmt.Errorf("%s: %d clusters, want the bench's one", kubeconfig, len(cfg.Clusters))
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return "", err
		}
		return u.Host, nil
	}
	return "", nil
}

// delayedKubeconfig writes a copy of kubeconfig whose cluster is reached
// at proxy (host:port) instead.
func delayedKubeconfig(kubeconfig, proxy, dir string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return "", err
		}
		u.Host = proxy
		c.Server = u.String()
	}
	path := filepath.Join(dir, "kubeconfig-delayed")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o600)
}
