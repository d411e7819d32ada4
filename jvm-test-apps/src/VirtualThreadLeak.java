import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A leak held by virtual threads' own frames: THREADS virtual threads (events-0, events-1, ...)
 * each append events to a list that only a local variable of their own frame holds, and sleep
 * between batches, so most of the time they are parked and their frames live in the heap
 * rather than on a carrier's stack: request state kept by handlers on virtual threads.
 * Needs JDK 21+; virtual threads are made by reflection so that the class compiles for Java 11.
 * Prints READY once every thread holds its list and DONE with the events held at the end.
 * Usage: java VirtualThreadLeak SECONDS [THREADS [EVENTS_PER_SECOND]]
 */
public class VirtualThreadLeak {
    static final class Event {
        final long id;
        final String name;

        Event(long id, String name) {
            this.id = id;
            this.name = name;
        }
    }

    static final AtomicLong HELD = new AtomicLong();
    static volatile long sink;

    /** One handler's loop: its events are held by `events`, a local of this frame, only. */
    static void collect(int me, int perBatch, CountDownLatch started) {
        List<Event> events = new ArrayList<>();
        started.countDown();
        for (long n = 0; ; ) {
            for (int i = 0; i < perBatch; i++, n++) {
                events.add(new Event(n, "event-" + me + "-" + n));
            }
            HELD.addAndGet(perBatch);
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                sink += events.size();
                return;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 200;
        int perSecond = args.length > 2 ? Integer.parseInt(args[2]) : 40_000;
        int perBatch = Math.max(1, perSecond / threads / 10);
        Class<?> builderType = Class.forName("java.lang.Thread$Builder");
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Method name = builderType.getMethod("name", String.class, long.class);
        builder = name.invoke(builder, "events-", 0L);
        ThreadFactory factory = (ThreadFactory) builderType.getMethod("factory").invoke(builder);
        CountDownLatch started = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            final int me = t;
            factory.newThread(() -> collect(me, perBatch, started)).start();
        }
        started.await();
        System.out.println("READY");
        System.out.flush();
        Thread.sleep((long) (seconds * 1000));
        // Virtual threads are daemons: the JVM ends with them parked, their lists held.
        System.out.println("DONE events=" + HELD.get());
    }
}
