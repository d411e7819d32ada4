import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A quiet heap of types with very different object sizes and counts, to compare estimates from
 * allocation samples with an exact walk: 16-byte objects by the million, 48-byte records, int and
 * long arrays of hundreds and thousands of bytes, strings, and a hash map. It builds the heap,
 * collects (so the agent estimates after a GC), waits for that estimate, prints STEADY with what
 * it holds, and idles.
 * Usage: java MixedHeap SECONDS [SCALE]   (SCALE 1.0 = about 2 M objects, 90 MB)
 */
public class MixedHeap {
    static final class Small {}

    static final class Record {
        long a, b, c, d;
        Object ref;
        Record(long seed, Object ref) { a = seed; b = seed * 3; c = seed * 7; d = seed * 11; this.ref = ref; }
    }

    static final List<Object> KEEP = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 60;
        double scale = args.length > 1 ? Double.parseDouble(args[1]) : 1.0;
        System.out.println("READY");
        System.out.flush();
        int smalls = (int) (1_000_000 * scale);
        int records = (int) (300_000 * scale);
        int ints = (int) (50_000 * scale);
        int longs = (int) (1_000 * scale);
        int strings = (int) (200_000 * scale);
        int entries = (int) (100_000 * scale);
        // In chunks of 10,000: one 4 MB array is a single allocation outside any TLAB, which
        // JDK 17's sampler can miss outright (it misses a few percent of those), and a type
        // made of one object is then all or nothing.
        for (int from = 0; from < smalls; from += 10_000) {
            Small[] chunk = new Small[Math.min(10_000, smalls - from)];
            for (int i = 0; i < chunk.length; i++) chunk[i] = new Small();
            KEEP.add(chunk);
        }
        Record previous = null;
        for (int i = 0; i < records; i++) previous = new Record(i, previous);
        KEEP.add(previous);
        for (int i = 0; i < ints; i++) KEEP.add(new int[64]);
        for (int i = 0; i < longs; i++) KEEP.add(new long[1000]);
        for (int i = 0; i < strings; i++) KEEP.add("name-" + i);
        Map<Integer, Integer> map = new HashMap<>();
        for (int i = 0; i < entries; i++) map.put(i, i);
        KEEP.add(map);
        System.gc();
        // Long enough for the agent's next estimate (at most every 500 ms, after the GC's
        // ObjectFree events) to see this collection before anyone asks for a walk.
        Thread.sleep(1500);
        System.out.println("STEADY smalls=" + smalls + " records=" + records + " ints=" + ints
                + " longs=" + longs + " strings=" + strings + " entries=" + entries);
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < end) Thread.sleep(50);
        System.out.println("DONE " + KEEP.size());
    }
}
