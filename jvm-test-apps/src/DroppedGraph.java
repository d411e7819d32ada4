import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/**
 * A big graph the agent must not keep: builds a TreeMap of ENTRIES entries and drops it at
 * once, again and again, beside a steady live set of LIVE_MB. Every entry of a TreeMap reaches
 * the whole tree (its parent, its children), so an agent that keeps one sampled entry alive
 * keeps the whole map: the heap after GC then holds maps the application dropped.
 * Prints READY once the live set is built and DONE with the maps made at the end.
 * With a fourth argument "static", each map is held by a static field until the next one
 * replaces it (a cache reloaded): reachable from a static, then dropped.
 * Usage: java DroppedGraph SECONDS [ENTRIES [LIVE_MB [static]]]
 */
public class DroppedGraph {
    static final List<byte[]> LIVE = new ArrayList<>();
    static volatile TreeMap<Integer, Integer> sink;
    static volatile TreeMap<Integer, Integer> current;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 15;
        int entries = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
        int liveMb = args.length > 2 ? Integer.parseInt(args[2]) : 13;
        boolean held = args.length > 3 && args[3].equals("static");
        for (int i = 0; i < liveMb * 1024; i++) {
            LIVE.add(new byte[1024]);
        }
        System.out.println("READY live=" + LIVE.size());
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long made = 0;
        while (System.nanoTime() < end) {
            TreeMap<Integer, Integer> map = new TreeMap<>();
            for (int i = 0; i < entries; i++) {
                map.put(i, i);
            }
            if (held) {
                current = map;
            } else {
                sink = map;
                sink = null;
            }
            made++;
        }
        System.out.println("DONE maps=" + made);
    }
}
