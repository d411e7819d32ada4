import java.util.HashMap;
import java.util.Map;

/**
 * A catalog whose strings are each held twice, as a map's key and as its item's field: 200,000
 * of them, built before READY and never changed. After READY it makes strings that die at once
 * (a ring keeps the last 1,024), so that most sampled strings are garbage and a path search,
 * finding few of them, goes through every root and counts; the live strings stay the catalog's,
 * the ring's and the JDK's. A count of live strings must find each once, however many
 * references lead to it.
 * Usage: java SharedStrings SECONDS
 */
public class SharedStrings {
    static final class Item {
        final String sku;
        final byte[] details = new byte[16];

        Item(String sku) {
            this.sku = sku;
        }
    }

    static final Map<String, Item> CATALOG = new HashMap<>();
    static final String[] RECENT = new String[1024];

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        for (int i = 0; i < 200_000; i++) {
            Item item = new Item("sku-" + i);
            CATALOG.put(item.sku, item);
        }
        System.gc();
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) RECENT[i & 1023] = "tmp-" + System.nanoTime();
            Thread.sleep(1);
        }
        System.out.println("DONE items=" + CATALOG.size());
        System.out.flush();
    }
}
