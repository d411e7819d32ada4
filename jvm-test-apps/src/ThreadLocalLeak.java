import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * A leak held only through a thread: a worker thread named "leaky-worker" keeps every request's
 * record in a ThreadLocal list it never clears (a per-thread cache that outlives its requests).
 * Nothing else references the list: the path to it runs from the thread through its
 * ThreadLocalMap. Prints READY once working and DONE with the records held at the end. The worker
 * stays alive until the VM exits, as a pool thread does: were it to end, its thread-locals would
 * be garbage and a snapshot taken after that would rightly show no leak.
 * Usage: java ThreadLocalLeak SECONDS [RECORDS_PER_SECOND]
 */
public class ThreadLocalLeak {
    /** Constants in an interface shift how HotSpot numbers a superclass's fields in heap walks
     *  (differently before JDK 21 and after): the record's payload, a superclass field, must
     *  still be named right. */
    interface Tagged {
        String KIND = "record";
        int VERSION = 1;
    }

    static class Message {
        final String payload;
        Message(String payload) { this.payload = payload; }
    }

    static final class Record extends Message implements Tagged {
        final long id;
        final Object owner;
        Record(long id, String payload) { super(payload); this.id = id; this.owner = null; }
    }

    static final ThreadLocal<List<Record>> SEEN = ThreadLocal.withInitial(ArrayList::new);
    static volatile long sink;
    static volatile int held;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int perSecond = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        CountDownLatch done = new CountDownLatch(1);
        Thread worker = new Thread(() -> {
            long n = 0;
            long tick = System.nanoTime();
            try {
                while (System.nanoTime() < end) {
                    for (int i = 0; i < perSecond / 100; i++, n++) {
                        SEEN.get().add(new Record(n, "request-" + n));
                        sink += new StringBuilder("tmp").append(n).length();
                    }
                    held = SEEN.get().size();
                    tick += 10_000_000L;
                    long wait = tick - System.nanoTime();
                    if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
                }
                done.countDown();
                // Parked, not ended: the thread, and so its leak, lives as long as the VM.
                new CountDownLatch(1).await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "leaky-worker");
        worker.setDaemon(true);
        worker.start();
        System.out.println("READY");
        System.out.flush();
        done.await();
        System.out.println("DONE records=" + held);
    }
}
