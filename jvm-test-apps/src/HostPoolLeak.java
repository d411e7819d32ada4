import java.util.HashMap;
import java.util.LinkedList;
import java.util.Map;
import java.util.Objects;

/**
 * The Commons HttpClient leak from the Memory Cities paper: a connection manager keeps one
 * HostConnectionPool per host configuration in a HashMap and never removes a pool when its
 * connections are closed. Clients talk to ever-new hosts, so pools pile up.
 * Usage: java HostPoolLeak SECONDS [HOSTS_PER_SECOND]
 */
public class HostPoolLeak {
    static final class HostConfiguration {
        final String host;
        final int port;
        final String protocol;

        HostConfiguration(String host, int port, String protocol) {
            this.host = host;
            this.port = port;
            this.protocol = protocol;
        }

        @Override public boolean equals(Object o) {
            if (!(o instanceof HostConfiguration)) return false;
            HostConfiguration h = (HostConfiguration) o;
            return port == h.port && host.equals(h.host) && protocol.equals(h.protocol);
        }

        @Override public int hashCode() { return Objects.hash(host, port, protocol); }
    }

    static final class Connection {
        final HostConfiguration config;
        final byte[] buffer = new byte[64];
        boolean open = true;
        Connection(HostConfiguration config) { this.config = config; }
        void close() { open = false; }
    }

    static final class HostConnectionPool {
        final HostConfiguration config;
        final LinkedList<Connection> freeConnections = new LinkedList<>();
        int numConnections;
        HostConnectionPool(HostConfiguration config) { this.config = config; }
    }

    static final class ConnectionManager {
        private final Map<HostConfiguration, HostConnectionPool> pools = new HashMap<>();

        Connection open(HostConfiguration config) {
            HostConnectionPool pool = pools.computeIfAbsent(config, HostConnectionPool::new);
            pool.numConnections++;
            return new Connection(config);
        }

        void close(Connection c) {
            c.close();
            HostConnectionPool pool = pools.get(c.config);
            pool.numConnections--;
            // The bug: an empty pool should be removed from `pools` here.
        }
    }

    static volatile long sink;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int perSecond = args.length > 1 ? Integer.parseInt(args[1]) : 5000;
        ConnectionManager manager = new ConnectionManager();
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long n = 0;
        long tick = System.nanoTime();
        while (System.nanoTime() < end) {
            for (int i = 0; i < perSecond / 100; i++) {
                // Every request goes to a new ephemeral host: a fresh configuration each time.
                HostConfiguration config = new HostConfiguration("host-" + n + ".example", 8000 + (int) (n % 1000), "http");
                Connection c = manager.open(config);
                sink += c.buffer.length + new String("GET /" + n).length();
                manager.close(c);
                n++;
            }
            tick += 10_000_000L;
            long wait = tick - System.nanoTime();
            if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
        System.out.println("DONE pools=" + manager.pools.size());
        System.out.flush();
        // Exit from inside main with the manager still held by this local, as it was while the
        // application ran. Returning first would make the leak garbage before the JVM ends, and
        // the last snapshot (at VM death, or a walk racing the exit) would rightly find it gone.
        try {
            System.exit(0);
        } finally {
            java.lang.ref.Reference.reachabilityFence(manager);
        }
    }
}
