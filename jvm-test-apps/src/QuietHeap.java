import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * Builds a fixed heap, collects, then does nothing: a point where an agent's walk and
 * `jcmd GC.class_histogram` see the same heap.
 * Usage: java QuietHeap SECONDS [ENTRIES]
 */
public class QuietHeap {
    static final class Entry {
        final String key;
        final long[] values;
        Entry(String key, long[] values) { this.key = key; this.values = values; }
    }

    static final Map<String, Entry> INDEX = new HashMap<>();
    static final List<Object[]> ROWS = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int entries = args.length > 1 ? Integer.parseInt(args[1]) : 50000;
        for (int i = 0; i < entries; i++) {
            Entry e = new Entry("key-" + i, new long[i % 7]);
            INDEX.put(e.key, e);
            if (i % 10 == 0) ROWS.add(new Object[] {e, e.key, null});
        }
        System.gc();
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        // Parked, not Thread.sleep: on JDK 25 each sleep allocates a ThreadSleepEvent, JFR on or
        // not, and a quiet heap allocates nothing.
        while (System.nanoTime() < end) LockSupport.parkNanos(50_000_000L);
        System.out.println("DONE entries=" + INDEX.size());
    }
}
