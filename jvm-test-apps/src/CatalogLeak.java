import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * A service-sized heap with a leak: a catalog of PRODUCTS products (four objects each: the
 * product, its name, the name's bytes, its prices) is built and kept, then every request adds a
 * Session to a static list nobody clears, with short-lived garbage around it so young GCs run all
 * the time. With the defaults (2.5 M products, 200,000 sessions a second for 25 s) the live heap
 * ends at about 15 M objects, 5 M of them Sessions. At the end it collects, idles a moment so
 * the agent can see that collection, and prints how many sessions it holds. The paced loop
 * (`serve`) also holds the session list in a local of its frame.
 *
 * With SESSIONS_PER_SECOND 0 it runs requests at full speed instead (for benchmarks): after
 * WARMUP seconds it counts requests, every 100th request leaks a Session until MAX_SESSIONS, and
 * it prints "OPS requests-per-second" before DONE. LINGER seconds after DONE it exits, so a
 * benchmark can inspect the final heap. REQUESTS_PER_SECOND above 0 paces the requests like a
 * service under a steady load (256 bytes of garbage each, so 2,000,000 a second allocate about
 * 540 MB/s) and prints the CPU time the whole process used per measured second ("CPU 1.02"),
 * which is what an agent costs a paced service.
 * Usage: java CatalogLeak SECONDS [PRODUCTS] [SESSIONS_PER_SECOND] [WARMUP] [LINGER] [MAX_SESSIONS]
 *        [REQUESTS_PER_SECOND]
 */
public class CatalogLeak {
    static final class Product {
        final long id;
        final String name;
        final int[] prices;
        Product(long id) { this.id = id; this.name = "product-" + id; this.prices = new int[] {(int) id, 2, 3}; }
    }

    static final class Session {
        final long id;
        final long created;
        int hits;
        Session(long id, long created) { this.id = id; this.created = created; }
    }

    static Product[] catalog;
    static final List<Session> SESSIONS = new ArrayList<>();
    static volatile long sink;
    /** The last request's buffer: escapes, so the JIT cannot elide the garbage. */
    static volatile Object lastRequest;

    /** User plus system time of the whole process (all threads: application, GC, agent), in
     *  clock ticks of 10 ms (/proc/self/stat fields 14 and 15, after the parenthesized name). */
    static long cpuTicks() throws Exception {
        String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** The paced request loop. It is handed the session list, so its frame holds the list in
     *  a local for the whole run, as well as the static does: the static is the lasting root,
     *  the frame a second one. */
    static int serve(List<Session> sessions, int perSecond, int products, long start, long end)
            throws InterruptedException {
        long n = 0;
        long tickStart = start;
        while (System.nanoTime() < end) {
            for (int i = 0; i < perSecond / 100; i++) {
                sessions.add(new Session(n++, tickStart));
                byte[] request = new byte[512];
                lastRequest = request;
                sink += request.length + catalog[(int) (n % products)].prices[0];
            }
            long next = tickStart + 10_000_000L;
            long now = System.nanoTime();
            if (next > now) Thread.sleep((next - now) / 1_000_000L, (int) ((next - now) % 1_000_000L));
            tickStart = next;
        }
        settle();
        // Used to the end, so that the frame holds the list until it returns.
        return sessions.size();
    }

    /** Collects, then idles long enough for the agent's next estimate (at most every 500 ms,
     *  after the GC's ObjectFree events) to see this collection, and for the GC's own count to
     *  reach it through JFR (read once a second). */
    static void settle() throws InterruptedException {
        System.gc();
        Thread.sleep(3000);
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 25;
        int products = args.length > 1 ? Integer.parseInt(args[1]) : 2_500_000;
        int perSecond = args.length > 2 ? Integer.parseInt(args[2]) : 200_000;
        double warmup = args.length > 3 ? Double.parseDouble(args[3]) : 3;
        double linger = args.length > 4 ? Double.parseDouble(args[4]) : 0;
        long maxSessions = args.length > 5 ? Long.parseLong(args[5]) : Long.MAX_VALUE;
        long pace = args.length > 6 ? Long.parseLong(args[6]) : 0;
        catalog = new Product[products];
        for (int i = 0; i < products; i++) catalog[i] = new Product(i);
        System.out.println("READY catalog=" + products);
        System.out.flush();
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long n = 0;
        int held;
        if (perSecond > 0) {
            held = serve(SESSIONS, perSecond, products, start, end);
        } else {
            long measureFrom = start + (long) (warmup * 1e9);
            long counted = 0;
            long now = start;
            long cpuFrom = -1;
            while (now < end) {
                if (pace > 0) {
                    // Where the schedule says request n is due; ahead of it, wait.
                    long due = start + (long) (n * 1e9 / pace);
                    if (due - now > 1_000_000L) LockSupport.parkNanos(due - now);
                }
                for (int i = 0; i < 1000; i++) {
                    n++;
                    if (n % 100 == 0 && SESSIONS.size() < maxSessions) SESSIONS.add(new Session(n, now));
                    byte[] request = new byte[256];
                    lastRequest = request;
                    sink += request.length + catalog[(int) (n % products)].name.length();
                }
                now = System.nanoTime();
                if (now >= measureFrom) {
                    if (cpuFrom < 0) cpuFrom = cpuTicks();
                    counted += 1000;
                }
            }
            double measured = (end - Math.max(measureFrom, start)) / 1e9;
            System.out.println("OPS " + (long) (counted / measured));
            if (pace > 0) System.out.printf("CPU %.3f%n", (cpuTicks() - cpuFrom) / 100.0 / measured);
            settle();
            held = SESSIONS.size();
        }
        System.out.println("DONE sessions=" + held);
        System.out.flush();
        if (linger > 0) Thread.sleep((long) (linger * 1000));
    }
}
