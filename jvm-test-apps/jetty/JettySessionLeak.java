package jetty;

import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import javax.servlet.http.HttpSession;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.session.DefaultSessionCache;
import org.eclipse.jetty.server.session.DefaultSessionIdManager;
import org.eclipse.jetty.server.session.HouseKeeper;
import org.eclipse.jetty.server.session.SessionHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * A leak in a real server's own structures: an embedded Jetty 9.4 (Debian's libjetty9-java)
 * whose servlet at /login calls request.getSession(true) and stores a small UserProfile in it.
 * A client that sends no cookies gets a new session per request, and the sessions never expire
 * (max inactive interval -1, the default DefaultSessionCache with NEVER_EVICT and a
 * NullSessionDataStore): Jetty's session cache, the ConcurrentHashMap in
 * DefaultSessionCache._sessions, keeps every one of them. Immortal sessions schedule no
 * inactivity timer, so that map is their only holder; a finite interval (MAX_INACTIVE_SECONDS)
 * also puts one timer per session into the server's scheduler queue, a second holder. An
 * interval of a minute or less is a steady service, no leak: the session house keeper then
 * scavenges every second (its default is every 10 minutes), so expired sessions leave the
 * cache within a second of expiring and the live sessions level off.
 *
 * Before READY it builds a steady catalog of the same kinds of objects (a static
 * ConcurrentHashMap of 200,000 Products with Strings and byte[]s), which then never changes, so
 * the leak must be told apart from it.
 *
 * Prints "PORT n" and "READY" once the server listens on a free loopback port, serves until a
 * client asks GET /done (or for SECONDS at most), then prints "DONE sessions=N requests=M" and exits with the sessions still live (the
 * server is never stopped: stopping it would empty the cache).
 * Usage: java -p JETTY_JARS --add-modules ALL-MODULE-PATH -cp CLASSES jetty.JettySessionLeak SECONDS
 *        [MAX_INACTIVE_SECONDS (default -1: never expire)]
 */
public class JettySessionLeak {
    static final class Product {
        final String sku;
        final String title;
        final byte[] details;

        Product(int i) {
            sku = "sku-" + i;
            title = "Catalog product number " + i;
            details = new byte[48];
            details[0] = (byte) i;
        }
    }

    /** What the servlet stores in each session. */
    static final class UserProfile {
        final String user;
        final String email;
        final String displayName;
        final long loggedInAt;
        final byte[] preferences;

        UserProfile(String user, long n) {
            this.user = user;
            this.email = user + "@example.org";
            this.displayName = "User " + user + " #" + n;
            this.loggedInAt = System.currentTimeMillis();
            this.preferences = new byte[384];
            preferences[(int) (n % preferences.length)] = 1;
        }
    }

    static final Map<String, Product> CATALOG = new ConcurrentHashMap<>();
    static final AtomicLong LOGINS = new AtomicLong();
    /** Counted down by GET /done: the client's load is over. */
    static final CountDownLatch FINISHED = new CountDownLatch(1);

    public static final class DoneServlet extends HttpServlet {
        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            FINISHED.countDown();
            byte[] body = "done\n".getBytes(StandardCharsets.UTF_8);
            response.setContentType("text/plain");
            response.setContentLength(body.length);
            response.getOutputStream().write(body);
        }
    }

    public static final class LoginServlet extends HttpServlet {
        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            long n = LOGINS.incrementAndGet();
            String user = request.getParameter("user");
            if (user == null) user = "anonymous" + n;
            HttpSession session = request.getSession(true);
            session.setAttribute("profile", new UserProfile(user, n));
            Product featured = CATALOG.get("sku-" + (n % CATALOG.size()));
            byte[] body = ("welcome " + user + ", today: " + featured.title + "\n").getBytes(StandardCharsets.UTF_8);
            response.setContentType("text/plain");
            response.setContentLength(body.length);
            response.getOutputStream().write(body);
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int maxInactiveSeconds = args.length > 1 ? Integer.parseInt(args[1]) : -1;
        for (int i = 0; i < 200_000; i++) {
            Product p = new Product(i);
            CATALOG.put(p.sku, p);
        }
        System.gc();

        QueuedThreadPool pool = new QueuedThreadPool(16, 4);
        pool.setName("jetty-worker");
        Server server = new Server(pool);
        if (maxInactiveSeconds > 0 && maxInactiveSeconds <= 60) {
            DefaultSessionIdManager ids = new DefaultSessionIdManager(server);
            HouseKeeper keeper = new HouseKeeper();
            keeper.setSessionIdManager(ids);
            keeper.setIntervalSec(1);
            ids.setSessionHouseKeeper(keeper);
            server.setSessionIdManager(ids);
        }
        ServerConnector connector = new ServerConnector(server, 1, 1);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);

        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.SESSIONS);
        context.setContextPath("/");
        SessionHandler sessions = context.getSessionHandler();
        sessions.setMaxInactiveInterval(maxInactiveSeconds);
        context.addServlet(new ServletHolder(new LoginServlet()), "/login");
        context.addServlet(new ServletHolder(new DoneServlet()), "/done");
        server.setHandler(context);
        server.start();

        System.out.println("PORT " + connector.getLocalPort());
        System.out.println("READY");
        System.out.flush();
        FINISHED.await((long) (seconds * 1e9), TimeUnit.NANOSECONDS);
        long live = ((DefaultSessionCache) sessions.getSessionCache()).getSessionsCurrent();
        System.out.println("DONE sessions=" + live + " requests=" + LOGINS.get());
        System.out.flush();
        try {
            System.exit(0);
        } finally {
            // The server, its session cache and every session stay reachable until the VM is
            // gone (System.exit does not return: its shutdown runs inside this frame).
            Reference.reachabilityFence(server);
            Reference.reachabilityFence(sessions);
        }
    }
}
