import java.util.ArrayList;
import java.util.List;

/**
 * Garbage the agent must not keep: allocates ARRAY_KIB arrays and drops each at once, beside a
 * steady live set of LIVE_MB, so the heap after each GC is the live set alone. With an agent
 * that holds what it samples through a collection that keeps weakly held objects (generational
 * ZGC's young collections), the heap after GC grows instead.
 * Prints READY once the live set is built and DONE with the arrays made at the end.
 * Usage: java DroppedArrays SECONDS [ARRAY_KIB [LIVE_MB]]
 */
public class DroppedArrays {
    static final List<byte[]> LIVE = new ArrayList<>();
    static volatile byte[] sink;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 15;
        int arrayKib = args.length > 1 ? Integer.parseInt(args[1]) : 256;
        int liveMb = args.length > 2 ? Integer.parseInt(args[2]) : 13;
        for (int i = 0; i < liveMb * 1024; i++) {
            LIVE.add(new byte[1024]);
        }
        System.out.println("READY live=" + LIVE.size());
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long made = 0;
        while (System.nanoTime() < end) {
            byte[] array = new byte[arrayKib * 1024];
            array[made % array.length == 0 ? 0 : 1] = 1;
            sink = array;
            made++;
        }
        System.out.println("DONE arrays=" + made);
    }
}
