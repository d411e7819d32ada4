import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * A thread-local leak in a thread pool: every request a pool thread serves appends its record to
 * that thread's ThreadLocal list, which nobody clears, so each of the pool's threads holds a
 * growing list. The pool's threads are daemons and outlive the run, as a server's do.
 * Prints READY once working and DONE with the requests served at the end.
 * Usage: java ThreadPoolLeak SECONDS [THREADS [REQUESTS_PER_SECOND]]
 */
public class ThreadPoolLeak {
    static final class Request {
        final long id;
        final String path;
        Request(long id, String path) { this.id = id; this.path = path; }
    }

    static final ThreadLocal<List<Request>> SERVED = ThreadLocal.withInitial(ArrayList::new);
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int perSecond = args.length > 2 ? Integer.parseInt(args[2]) : 20000;
        ThreadFactory names = Executors.defaultThreadFactory();
        ThreadFactory daemons = r -> {
            Thread t = names.newThread(r);
            t.setDaemon(true);
            return t;
        };
        ExecutorService pool = Executors.newFixedThreadPool(threads, daemons);
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long tick = System.nanoTime();
        long n = 0;
        System.out.println("READY");
        System.out.flush();
        while (System.nanoTime() < end) {
            // A batch per 10 ms, spread over the pool: each thread serves about as many.
            for (int i = 0; i < perSecond / 100; i++, n++) {
                final long id = n;
                pool.execute(() -> {
                    SERVED.get().add(new Request(id, "/items/" + id));
                    sink += new StringBuilder("tmp").append(id).length();
                });
            }
            tick += 10_000_000L;
            long wait = tick - System.nanoTime();
            if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
        // Let the queue drain, but keep the threads (and their lists) alive to the end: a pool
        // shut down would end its threads, and their thread-locals would be garbage.
        pool.submit(() -> {}).get(30, TimeUnit.SECONDS);
        System.out.println("DONE requests=" + n);
    }
}
