// etcd's official Go client concurrency.Mutex behind lockbench's adapter protocol
// (docs/adapter-protocol.md). One process is one client: one clientv3 client and one
// concurrency.Session (a lease kept alive by the library's own goroutine, which a pause stops
// with the process). Token: the header revision of the response that granted the lock (etcd
// revisions only grow, so a later grant carries a higher one).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/version"
)

type request struct {
	ID  uint64 `json:"id"`
	Op  string `json:"op"`
	Key *int64 `json:"key"`
}

func say(v map[string]interface{}) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func main() {
	eps := strings.Split(os.Getenv("LOCKBENCH_ENDPOINTS"), ",")
	prefix := os.Getenv("LOCKBENCH_PREFIX")
	ttlMs, _ := strconv.Atoi(os.Getenv("LOCKBENCH_TTL_MS"))
	ttl := (ttlMs + 999) / 1000
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-go:", err)
		os.Exit(2)
	}
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-go: no session:", err)
		os.Exit(2)
	}
	say(map[string]interface{}{"hello": 1, "library": "etcd clientv3 concurrency.Mutex",
		"version": version.Version, "fencing": "header revision of the response that granted the lock"})
	held := map[int64]*concurrency.Mutex{}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			say(map[string]interface{}{"id": 0, "fail": "other", "detail": "not a request: " + in.Text()})
			continue
		}
		out := map[string]interface{}{"id": req.ID}
		var key int64
		if req.Key != nil {
			key = *req.Key
		}
		switch req.Op {
		case "acquire":
			m := concurrency.NewMutex(s, fmt.Sprintf("/lockbench-lib/%sk%d", prefix, key))
			if err := m.Lock(context.Background()); err != nil {
				out["info"], out["detail"] = "connection-lost", err.Error()
				break
			}
			held[key] = m
			out["ok"], out["token"] = true, m.Header().Revision
		case "release", "renew":
			m := held[key]
			if m == nil {
				out["fail"], out["detail"] = "lock-lost", "not held by this client"
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			r, err := cli.Get(ctx, m.Key())
			if err == nil && len(r.Kvs) == 0 {
				out["fail"], out["detail"] = "lock-lost", "the lock key is gone (lease expired)"
				delete(held, key)
			} else if err != nil {
				out["info"], out["detail"] = "connection-lost", err.Error()
			} else if req.Op == "release" {
				delete(held, key)
				if err := m.Unlock(ctx); err != nil {
					out["info"], out["detail"] = "connection-lost", err.Error()
				} else {
					out["ok"] = true
				}
			} else {
				out["ok"] = true
			}
			cancel()
		case "close":
			say(map[string]interface{}{"id": req.ID, "ok": true})
			s.Close()
			cli.Close()
			return
		default:
			out["fail"], out["detail"] = "other", "unknown op "+req.Op
		}
		say(out)
	}
	s.Close()
	cli.Close()
}
