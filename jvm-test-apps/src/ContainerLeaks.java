import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A leak into a container type that larger, steady holders in the same heap also use, with the
 * same element type: the leak's own holder must be named, never the big container's. Before
 * READY it builds a catalog (a HashMap of ArrayLists), an index (a ConcurrentHashMap) and a
 * history (a LinkedList), 400,000 Items in all, which then never change. Then it leaks Items
 * into one container of the same kind, held by the root the mode names:
 *   static  a static HashMap            (ContainerLeaks.SESSIONS)
 *   chm     a static ConcurrentHashMap  (ContainerLeaks.LISTENERS)
 *   thread  an ArrayList in a thread-local of the thread "registry-worker" (no local of its
 *           own holds it: the thread-local is the only holder)
 *   local   a LinkedList in a local of main
 * Usage: java ContainerLeaks SECONDS MODE [ITEMS_PER_SECOND]
 */
public class ContainerLeaks {
    static final class Item {
        final String name;
        final int[] payload = new int[4];
        Item(String name) { this.name = name; }
    }

    static final Map<Integer, List<Item>> CATALOG = new HashMap<>();
    static final Map<Integer, Item> INDEX = new ConcurrentHashMap<>();
    static final LinkedList<Item> HISTORY = new LinkedList<>();

    static final Map<Integer, Item> SESSIONS = new HashMap<>();
    static final Map<Integer, Item> LISTENERS = new ConcurrentHashMap<>();
    static final ThreadLocal<List<Item>> REGISTRY = ThreadLocal.withInitial(ArrayList::new);

    static volatile long sink;

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        String mode = args[1];
        int perSecond = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
        for (int i = 0; i < 50_000; i++) {
            List<Item> items = new ArrayList<>(4);
            for (int j = 0; j < 4; j++) items.add(new Item("catalog-" + i + "-" + j));
            CATALOG.put(i, items);
        }
        for (int i = 0; i < 100_000; i++) INDEX.put(i, new Item("index-" + i));
        for (int i = 0; i < 100_000; i++) HISTORY.add(new Item("history-" + i));
        System.gc();
        LinkedList<Item> local = new LinkedList<>();
        Object lock = new Object();
        long[] added = new long[1];
        Thread worker = null;
        if (mode.equals("thread")) {
            // The worker adds what main hands it to its own thread-local list, and stays alive
            // (parked) until the VM exits, as a pool thread would.
            worker = new Thread(() -> {
                long done = 0;
                while (true) {
                    long target;
                    synchronized (lock) {
                        while (added[0] == done) {
                            try { lock.wait(); } catch (InterruptedException e) { return; }
                        }
                        target = added[0];
                    }
                    for (; done < target; done++) REGISTRY.get().add(new Item("registered-" + done));
                }
            }, "registry-worker");
            worker.setDaemon(true);
            worker.start();
        }
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long n = 0;
        long tick = System.nanoTime();
        while (System.nanoTime() < end) {
            int batch = perSecond / 100;
            switch (mode) {
                case "static":
                    for (int i = 0; i < batch; i++, n++) SESSIONS.put((int) n, new Item("session-" + n));
                    break;
                case "chm":
                    for (int i = 0; i < batch; i++, n++) LISTENERS.put((int) n, new Item("listener-" + n));
                    break;
                case "local":
                    for (int i = 0; i < batch; i++, n++) local.add(new Item("local-" + n));
                    break;
                case "thread":
                    n += batch;
                    synchronized (lock) { added[0] = n; lock.notifyAll(); }
                    break;
                default:
                    throw new IllegalArgumentException("mode: static, chm, thread or local");
            }
            // Garbage beside the leak, as a service makes.
            sink += new StringBuilder("request ").append(n).toString().length();
            tick += 10_000_000L;
            long wait = tick - System.nanoTime();
            if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
        System.out.println("DONE leaked=" + n + " steady=" + (CATALOG.size() + INDEX.size() + HISTORY.size()));
        System.out.flush();
        java.lang.ref.Reference.reachabilityFence(local);
    }
}
