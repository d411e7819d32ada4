import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Objects with known lifetimes, one allocation site each: Ephemeral objects die at once; Cached
 * objects are held by a cache (Cache.Entry.value) for HOLD_GCS collections and then dropped;
 * Forever objects are kept in a static list to the end. Byte-array garbage keeps young GCs
 * coming every few hundred milliseconds on a small young generation.
 * Usage: java Lifetimes SECONDS
 */
public class Lifetimes {
    /** Collections a cached object is held for. */
    static final int HOLD_GCS = 3;

    static final class Ephemeral {
        long a, b, c, d, e, f, g, h;
    }

    static final class Cached {
        long a, b, c, d, e, f, g, h;
    }

    static final class Forever {
        long a, b, c, d, e, f, g, h;
    }

    /** A queue of values, each let go once HOLD_GCS collections have passed since it came. */
    static final class Cache {
        static final class Entry {
            Cached value;
            long gc;
            Entry next;
        }

        Entry head;
        Entry tail;

        void put(Cached value, long gc) {
            Entry e = new Entry();
            e.value = value;
            e.gc = gc;
            if (tail == null) {
                head = e;
            } else {
                tail.next = e;
            }
            tail = e;
        }

        void evict(long gc) {
            while (head != null && gc - head.gc >= HOLD_GCS) {
                head = head.next;
            }
            if (head == null) {
                tail = null;
            }
        }
    }

    static final Cache CACHE = new Cache();
    static final List<Forever> FOREVER = new ArrayList<>();
    static volatile long sink;

    static long collections() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    /** Each Ephemeral replaces the last, so it escapes (no scalar replacement) and dies at once. */
    static volatile Object last;

    /**
     * The same for the garbage that drives the collections: an array that did not escape was
     * scalar-replaced once C2 compiled the loop (about 2 s in), and the GCs came seconds apart
     * instead of every 160 ms.
     */
    static volatile byte[] garbage;

    static void ephemeral() {
        Ephemeral e = new Ephemeral();
        e.a = sink;
        last = e;
    }

    static void cached(long gc) {
        CACHE.put(new Cached(), gc);
    }

    static void forever() {
        FOREVER.add(new Forever());
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long tickStart = System.nanoTime();
        while (System.nanoTime() < end) {
            long gc = collections();
            CACHE.evict(gc);
            for (int i = 0; i < 200; i++) {
                ephemeral();
            }
            for (int i = 0; i < 100; i++) {
                cached(gc);
            }
            for (int i = 0; i < 20; i++) {
                forever();
            }
            for (int i = 0; i < 200; i++) {
                garbage = new byte[4096];
            }
            long next = tickStart + 10_000_000L;
            long now = System.nanoTime();
            if (next > now) {
                Thread.sleep((next - now) / 1_000_000L, (int) ((next - now) % 1_000_000L));
            }
            tickStart = next;
        }
        System.out.println("DONE forever=" + FOREVER.size() + " gcs=" + collections());
    }
}
