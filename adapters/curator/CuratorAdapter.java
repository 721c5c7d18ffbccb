// Apache Curator's InterProcessMutex (and InterProcessReadWriteLock for shared holds) behind
// lockbench's adapter protocol (docs/adapter-protocol.md). One process is one client: one
// CuratorFramework, so one ZooKeeper session whose heartbeats a pause stops with the process.
// Token: the lock node's sequence number (it only grows under one lock's node).
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.KeeperException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class CuratorAdapter {
  /** InterProcessMutex with its lock node's path in reach (Curator keeps it protected). */
  static final class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework c, String path) { super(c, path); }
    String node() { return getLockPath(); }
  }

  // lockbench writes the requests, always in this shape: {"id":7,"op":"acquire","key":3}
  static final Pattern REQ = Pattern.compile("\\{\"id\":(\\d+),\"op\":\"(\\w+)\"(?:,\"key\":(\\d+))?\\}");

  static String json(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
  }

  public static void main(String[] args) throws Exception {
    String endpoints = System.getenv("LOCKBENCH_ENDPOINTS");
    String prefix = System.getenv("LOCKBENCH_PREFIX");
    int ttlMs = Integer.parseInt(System.getenv("LOCKBENCH_TTL_MS"));
    CuratorFramework zk = CuratorFrameworkFactory.newClient(endpoints, ttlMs, 5000, new RetryOneTime(100));
    zk.start();
    if (!zk.blockUntilConnected(5, java.util.concurrent.TimeUnit.SECONDS)) {
      System.err.println("curator: no ZooKeeper session within 5 s: " + endpoints);
      System.exit(2);
    }
    // zk-curator's layout ({root}/curator/k{key}), so its observer reads these locks too
    // (adapter.toml's [observe]).
    String root = "/lockbench-lib/" + prefix + "/curator";
    String version = CuratorFramework.class.getPackage().getImplementationVersion();
    System.out.println("{\"hello\": 1, \"library\": \"curator\", \"version\": "
        + json(version == null ? "5.4.0" : version)
        + ", \"fencing\": \"the lock node's sequence number\", \"shared\": true}");
    System.out.flush();
    Map<Long, Mutex> held = new HashMap<>();
    Map<Long, InterProcessReadWriteLock> rw = new HashMap<>();
    Map<Long, InterProcessMutex> sharedHeld = new HashMap<>();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String line;
    while ((line = in.readLine()) != null) {
      Matcher m = REQ.matcher(line.trim());
      if (!m.matches()) {
        System.out.println("{\"id\": 0, \"fail\": \"other\", \"detail\": " + json("not a request: " + line) + "}");
        System.out.flush();
        continue;
      }
      long id = Long.parseLong(m.group(1));
      String op = m.group(2);
      long key = m.group(3) == null ? -1 : Long.parseLong(m.group(3));
      String path = root + "/k" + key;
      String answer;
      try {
        switch (op) {
          case "acquire": {
            Mutex mx = new Mutex(zk, path);
            mx.acquire();
            held.put(key, mx);
            String node = mx.node();
            answer = "\"ok\": true, \"token\": " + Long.parseLong(node.substring(node.length() - 10));
            break;
          }
          case "acquire_shared": {
            InterProcessReadWriteLock l = rw.computeIfAbsent(key, k -> new InterProcessReadWriteLock(zk, path + "-rw"));
            l.readLock().acquire();
            sharedHeld.put(key, l.readLock());
            answer = "\"ok\": true";
            break;
          }
          case "release": {
            InterProcessMutex mx = held.containsKey(key) ? held.remove(key) : sharedHeld.remove(key);
            if (mx == null) { answer = "\"fail\": \"lock-lost\", \"detail\": \"not held by this client\""; break; }
            String node = mx instanceof Mutex ? ((Mutex) mx).node() : null;
            if (node != null && zk.checkExists().forPath(node) == null) {
              answer = "\"fail\": \"lock-lost\", \"detail\": " + json(node + " is gone (session expired)");
              try { mx.release(); } catch (Exception ignored) { }
              break;
            }
            mx.release();
            answer = "\"ok\": true";
            break;
          }
          case "renew": {
            Mutex mx = held.get(key);
            if (mx == null && !sharedHeld.containsKey(key)) { answer = "\"fail\": \"lock-lost\", \"detail\": \"not held by this client\""; break; }
            if (mx != null && zk.checkExists().forPath(mx.node()) == null) {
              answer = "\"fail\": \"lock-lost\", \"detail\": \"the lock node is gone (session expired)\"";
              break;
            }
            answer = "\"ok\": true";
            break;
          }
          case "close": {
            System.out.println("{\"id\": " + id + ", \"ok\": true}");
            System.out.flush();
            zk.close();
            return;
          }
          default:
            answer = "\"fail\": \"other\", \"detail\": " + json("unknown op " + op);
        }
      } catch (KeeperException.ConnectionLossException | KeeperException.SessionExpiredException e) {
        answer = "\"info\": \"connection-lost\", \"detail\": " + json(e.toString());
      } catch (Exception e) {
        answer = "\"info\": \"other\", \"detail\": " + json(e.toString());
      }
      System.out.println("{\"id\": " + id + ", " + answer + "}");
      System.out.flush();
    }
    zk.close();
  }
}
