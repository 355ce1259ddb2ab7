// CuratorLock is a lock program of lockpick's worker protocol
// (docs/worker-protocol.md): Apache Curator's InterProcessMutex, the
// ZooKeeper lock recipe the critique of Redlock names, on the ensemble
// lockpick gives it (the "zookeeper" addresses of each request). It
// declares block, renew and fence: an acquire waits for the lock up to
// wait_ms; its fence is the lock znode's czxid; the session keeps the lock
// alive, and every third of the session timeout a renewal asks the
// ensemble whether the lock's node is still this session's and, if it is,
// says so in a renewed notice (valid for the session timeout from when it
// asked). A renewal that fails is not reported: Curator's SUSPENDED and
// LOST (which its docs say to treat as the lock's loss) are not watched,
// and a holder writes as if it held the lock (as ignore_lost does for
// lockpick's own zk-lock). Built and run by ./curatorlock with Debian's
// jars (libcurator-recipes-java, zookeeper).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorLock {
    private static final PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    private CuratorFramework client;
    // held maps each lease's token (its node) to its mutex; a token leaves
    // it, under out's lock, before its release is answered, so no notice
    // of it follows the answer.
    private final Map<String, InterProcessMutex> held = new ConcurrentHashMap<>();
    private final ScheduledExecutorService renewer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "renewer");
        t.setDaemon(true);
        return t;
    });

    public static void main(String[] args) throws Exception {
        new CuratorLock().serve();
    }

    private void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            long received = System.nanoTime();
            long id = num(line, "id", 0);
            String reply;
            try {
                reply = handle(line, received);
            } catch (Exception e) {
                // After the request may have reached the ensemble: unknown.
                reply = "\"ok\":false,\"unknown\":true,\"error\":" + str(e.toString());
            }
            synchronized (out) {
                out.println("{\"id\":" + id + "," + reply + "}");
            }
        }
        if (client != null) {
            client.close();
        }
    }

    private String handle(String req, long received) throws Exception {
        String op = text(req, "op");
        long ttl = num(req, "ttl_ms", 2000);
        switch (op) {
            case "hello":
                connect(list(req, "zookeeper"), (int) ttl, num(req, "timeout_ms", 30000));
                return "\"ok\":true";
            case "acquire":
                return acquire(req, ttl, received);
            case "release":
                return release(text(req, "token"));
            default:
                return "\"ok\":false,\"error\":" + str("unsupported op " + op);
        }
    }

    // connect opens the session: every member's address, a session
    // timeout of the lease's TTL, and no retries (a retried operation
    // would hide that the first try may have run). An operation waits for
    // a connection a quarter of the TTL (Curator's default is 15 s): a
    // release while the holder is cut off from every member fails within
    // lockpick's 1 s instead of hanging past the trial.
    private void connect(List<String> members, int ttl, long timeoutMs) throws Exception {
        if (client != null) {
            return;
        }
        if (members.isEmpty()) {
            throw new IllegalArgumentException("no zookeeper members in the request (topology: {zookeeper: 3})");
        }
        client = CuratorFrameworkFactory.builder()
                .connectString(String.join(",", members))
                .sessionTimeoutMs(ttl)
                .connectionTimeoutMs(Math.max(ttl / 4, 250))
                .retryPolicy(new RetryNTimes(0, 0))
                .build();
        client.start();
        if (!client.blockUntilConnected((int) timeoutMs, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("no session within " + timeoutMs + "ms");
        }
        long every = Math.max(ttl / 3, 50);
        renewer.scheduleWithFixedDelay(this::renew, every, every, TimeUnit.MILLISECONDS);
    }

    // renew asks, for each lease held, whether its node is still this
    // session's; the ensemble heard from the session then, so the session
    // and the lock live at least the negotiated session timeout from when
    // it was asked. A lease still held when the answer comes gets a
    // renewed notice; a failed renewal is not reported (see the top).
    private void renew() {
        for (String node : held.keySet()) {
            try {
                long asked = System.nanoTime();
                Stat st = client.checkExists().forPath(node);
                long session = client.getZookeeperClient().getZooKeeper().getSessionId();
                int timeout = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
                if (st == null || st.getEphemeralOwner() != session || timeout <= 0) {
                    continue;
                }
                synchronized (out) {
                    if (held.containsKey(node)) {
                        out.println("{\"renewed\":{\"token\":" + str(node) + ",\"valid_ms\":" + timeout + ",\"at_mono_ns\":" + asked + "}}");
                    }
                }
            } catch (Exception e) {
                // disconnected, or the node gone: not watched, not reported
            }
        }
    }

    private String acquire(String req, long ttl, long received) throws Exception {
        String key = text(req, "key");
        long wait = num(req, "wait_ms", 0);
        InterProcessMutex m = new InterProcessMutex(client, "/lockpick-curator/" + key);
        if (!m.acquire(wait, TimeUnit.MILLISECONDS)) {
            return "\"ok\":false,\"error\":\"timed out waiting\"";
        }
        // The holder's node is the first participant. The ensemble heard
        // from this session when it answered this stat at the earliest:
        // the session, and the lock, live at least a TTL from the moment
        // it was asked, counted from when lockpick wrote the request
        // (before it was received).
        long asked = System.nanoTime();
        String node = m.getParticipantNodes().iterator().next();
        Stat st = client.checkExists().forPath(node);
        long sessionId = client.getZookeeperClient().getZooKeeper().getSessionId();
        if (st == null || st.getEphemeralOwner() != sessionId) {
            throw new IllegalStateException("the lock's first node " + node + " is not this session's: the grant is gone");
        }
        long validMs = (asked - received) / 1_000_000 + ttl;
        held.put(node, m);
        StringBuilder r = new StringBuilder("\"ok\":true,\"token\":" + str(node) + ",\"valid_ms\":" + validMs);
        if (req.contains("\"fenced\":true")) {
            r.append(",\"fence\":").append(st.getCzxid());
        }
        return r.toString();
    }

    private String release(String token) throws Exception {
        InterProcessMutex m;
        synchronized (out) {
            m = held.remove(token);
        }
        if (m == null) {
            return "\"ok\":false,\"error\":\"not held\"";
        }
        try {
            m.release();
        } catch (IllegalMonitorStateException | KeeperException.NoNodeException | KeeperException.SessionExpiredException e) {
            return "\"ok\":false,\"error\":" + str("not held: " + e);
        }
        return "\"ok\":true";
    }

    // A request is one line of flat JSON: these read its fields.

    private static String text(String json, String field) {
        Matcher m = Pattern.compile("\"" + field + "\":\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(json);
        return m.find() ? m.group(1).replace("\\\"", "\"").replace("\\\\", "\\") : "";
    }

    private static long num(String json, String field, long dflt) {
        Matcher m = Pattern.compile("\"" + field + "\":(-?\\d+)").matcher(json);
        return m.find() ? Long.parseLong(m.group(1)) : dflt;
    }

    private static List<String> list(String json, String field) {
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("\"" + field + "\":\\[([^\\]]*)\\]").matcher(json);
        if (m.find()) {
            Matcher s = Pattern.compile("\"([^\"]*)\"").matcher(m.group(1));
            while (s.find()) {
                out.add(s.group(1));
            }
        }
        return out;
    }

    private static String str(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\"";
    }
}
