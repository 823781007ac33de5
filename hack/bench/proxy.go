package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				// A copy of what was read, not the whole buffer: a queue
				// of full 32 KiB buffers for chunks of a few hundred
				// bytes grew the proxy to hundreds of megabytes.
				chunks <- chunk{time.Now().Add(delay), append([]byte(nil), buf[:n]...)}
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

// delayProxyCommand is the argument that re-executes the bench as the
// delay proxy alone (runDelayProxy).
const delayProxyCommand = "delay-proxy"

// startDelayProxyProcess runs the delay proxy in a child process (the
// bench itself, re-executed) and returns its address. A process of its
// own, because a measured command's peak RSS (wait4's maxrss) starts at
// the high-water mark of the process that started it: os/exec's vfork
// shares the bench's memory until the exec, so a proxy's buffers inside
// the bench would show up in every method's peak RSS.
func startDelayProxyProcess(ctx context.Context, self, target string, delay time.Duration) (string, error) {
	cmd := exec.CommandContext(ctx, self, delayProxyCommand, target, delay.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting the delay proxy: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // killed with ctx when the bench ends
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("the delay proxy gave no address: %w", err)
	}
	return strings.TrimSpace(addr), nil
}

// runDelayProxy is the proxy process: it prints its address and serves
// until it is killed.
func runDelayProxy(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: %s TARGET DELAY", delayProxyCommand)
	}
	delay, err := time.ParseDuration(args[1])
	if err != nil {
		return err
	}
	addr, err := startDelayProxy(context.Background(), args[0], delay)
	if err != nil {
		return err
	}
	fmt.Println(addr)
	select {}
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
